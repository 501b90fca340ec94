"""`gpuverify doctor` on the simulated host, in each state it must tell apart."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from doctor_cmd import doctor, last

pytestmark = pytest.mark.docker


def test_all_fine(sandbox):
    code, out = doctor(sandbox)
    assert code == 0 and last(out) == "READY", out
    assert f"container {sandbox.container}: running" in out and "arch gfx942" in out
    assert "repo aiter:" in out and "clean" in out
    execs = sandbox.exec_ids()
    assert len(execs) == 1 and "rocminfo" in execs[0], execs  # the only exec: rocminfo in the user's container


def test_wrong_host_arch(sandbox):
    sandbox.rewrite_env(arch="gfx950")
    code, out = doctor(sandbox)
    assert code == 1 and "host arch is gfx942, the Hosts row says gfx950" in last(out)


def test_container_missing(sandbox):
    sandbox.client.containers.get(sandbox.container).remove(force=True)
    code, out = doctor(sandbox)
    assert code == 1 and f"container {sandbox.container} is missing" in last(out)


def test_repo_dirty(sandbox):
    (sandbox.repo / "notes.txt").write_text("wip\n")
    code, out = doctor(sandbox)
    assert code == 1 and "repo aiter is dirty (1 paths)" in last(out) and "?? notes.txt" in out


def test_gpu_busy_is_reported_not_fatal(sandbox):
    from pytest_gpuverify.simulator import load_state, save_state

    state = load_state(sandbox.state_path)
    state.set_busy(2, pid=777, name="train.py")
    save_state(state, sandbox.state_path)
    code, out = doctor(sandbox)
    assert code == 0 and "3 of 4 GPUs idle and unlocked" in last(out)
    assert "777 train.py" in out and "use 95%" in out


def test_gpu_locked_by_someone_elses_flock(sandbox):
    lock = sandbox.spec.locks / "gpu-1.lock"
    holder = subprocess.Popen(["flock", "-x", "-o", str(lock), "sleep", "30"])
    try:
        time.sleep(0.3)
        code, out = doctor(sandbox)
        assert code == 0 and f"LOCKED ({lock})" in out and "3 of 4 GPUs idle and unlocked" in last(out)
        assert subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 1, "doctor never takes a lock"
    finally:
        holder.kill()
        holder.wait()


def test_doctor_heads_a_verbose_run(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "-v")
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "gpuverify doctor:" in out and "  READY" in out, out[-2000:]


def test_doctor_says_where_the_readings_come_from(sandbox):
    from pytest_gpuverify.simulator import load_state, save_state

    code, out = doctor(sandbox)
    assert code == 0 and "readings  amd-smi (amdsmi library not used: no amdsmi module)" in out, out
    state = load_state(sandbox.state_path)
    state.set_busy(2)
    save_state(state, sandbox.state_path)
    code, out = doctor(sandbox, ROCM_PATH=str(sandbox.sim_bin))  # where ROCm keeps the library
    assert "readings  amdsmi library, in-process" in out, out
    assert re.search(r"gpu 2 +use 95%.*processes: 4242 python3", out), out
