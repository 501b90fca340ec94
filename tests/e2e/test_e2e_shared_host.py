"""A shared GPU host: xdist workers, foreign lock holders, the command run on the host itself."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from kernel_repos import FIXTURE_TEST
from probe_paths import without_probe

pytestmark = pytest.mark.docker


def text(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


@pytest.mark.slow
def test_xdist_workers_write_every_artifact_once_and_summary_covers_all(sandbox):
    targets = [
        "op_tests/test_gemm_a8w8.py",
        "op_tests/test_rmsnorm2d.py",
        "op_tests/test_moe_2stage.py",
        "op_tests/test_no_check.py",
    ]
    proc = sandbox.pytest("-n", "2", *targets)
    out = text(proc)
    assert proc.returncode == 1, out
    verdicts = {t: sandbox.artifact(t).verdict for t in ("gemm_a8w8", "rmsnorm2d", "moe_2stage", "no_check")}
    assert verdicts == {"gemm_a8w8": "PASS", "rmsnorm2d": "PASS", "moe_2stage": "FAIL", "no_check": "INCONCLUSIVE"}
    summary = out[out.index("gpuverify =") :]
    assert len(re.findall(r"^(PASS|FAIL|INCONCLUSIVE)\s", summary, re.M)) == 4, summary
    ticket = sandbox.tickets / "T-1"
    assert sorted(p.name for p in ticket.glob("bench_*.json")) == sorted(f"bench_{t}.json" for t in verdicts), (
        "each artifact is written exactly once"
    )
    assert sandbox.lock_files_free()


def test_container_none_runs_on_the_host(sandbox):
    import os

    # the session's own PYTHONPATH (a CI job's) is kept after the worktree's, in the command and its import check
    session_path = ":".join(filter(None, (os.environ.get("PYTHONPATH"), "/nonexistent/ci-site")))
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-container", "none", env={"PYTHONPATH": session_path})
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, text(proc)[-3000:])
    assert art.container is None and art.workdir == str(sandbox.repo.resolve())
    assert art.imports["aiter"] == str(sandbox.repo.resolve() / "aiter" / "__init__.py")
    assert without_probe(art.env["PYTHONPATH"]) == f"{sandbox.repo.resolve()}:{session_path}"
    assert art.env["COLUMNS"] == "10000" and art.env["GPU_ARCHS"] == "gfx942"  # an aiter op_test's tables
    assert sandbox.exec_ids() == [], "no container is touched"


def test_gpu_wait_shows_what_it_waits_for_then_runs(sandbox):
    import threading
    import time

    from pytest_gpuverify.simulator import load_state, save_state

    def set_all(busy: bool):
        state = load_state(sandbox.state_path)
        for i in range(len(state.gpus)):
            state.set_busy(i) if busy else state.set_idle(i)
        save_state(state, sandbox.state_path)

    set_all(True)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-wait", "60", popen=True)
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.extend(iter(lambda: proc.stdout.read1(4096), b"")), daemon=True)
    reader.start()
    # the GPUs go idle once the session says it waits (not after a fixed delay: a loaded machine may
    # start the session later than that, and it would then find them idle and never wait)
    deadline = time.monotonic() + 60
    while b"waiting up to" not in b"".join(output) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    set_all(False)
    proc.wait(timeout=120)
    reader.join(timeout=10)
    out = b"".join(output).decode(errors="replace")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, out[-2000:])
    assert "gpuverify: waiting up to 60 s" in out and "4 busy" in out, out[-2000:]


def test_fixtures_record_runs_like_targets(sandbox):
    from pytest_gpuverify.cli import demo  # noqa: F401

    tests = sandbox.repo / "tests"
    tests.mkdir()
    (tests / "test_fixture_use.py").write_text(FIXTURE_TEST)
    import subprocess as sp

    sp.run(["git", "-C", str(sandbox.repo), "add", "-A"], check=True)
    sp.run(
        ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"], check=True
    )
    proc = sandbox.pytest("tests/test_fixture_use.py")
    assert proc.returncode == 0, text(proc)[-3000:]
    art = sandbox.artifact("fixture_gemm")
    assert art.verdict == "PASS" and len(art.gpus) == 2
    assert sandbox.lock_files_free()


NEGATIVE_TEST = """
def test_bad_kernel_is_caught(kernel_container):
    art = kernel_container.run(["python3", "op_tests/test_moe_2stage.py"], topic="negative_moe")
    assert art.verdict == "FAIL", art.reasons


def test_bad_kernel_said_to_pass(kernel_container):
    art = kernel_container.run(["python3", "op_tests/test_moe_2stage.py"], topic="positive_moe")
    assert art.verdict == "PASS", art.reasons
"""


def test_a_test_that_judges_its_artifact_decides_the_session(sandbox):
    """A negative test (a known-bad kernel, asserted FAIL) passes and the session exits 0, the artifact
    still FAIL and in the summary; asserting PASS on the same kernel fails the test and the session."""
    import subprocess as sp

    tests = sandbox.repo / "tests"
    tests.mkdir()
    (tests / "test_negative.py").write_text(NEGATIVE_TEST)
    sp.run(["git", "-C", str(sandbox.repo), "add", "-A"], check=True)
    sp.run(
        ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"], check=True
    )
    proc = sandbox.pytest("tests/test_negative.py::test_bad_kernel_is_caught")
    out = text(proc)
    assert proc.returncode == 0, out[-3000:]
    assert re.search(r"\b1 passed\b", out), out[-3000:]
    assert sandbox.artifact("negative_moe").verdict == "FAIL"
    summary = out[out.index("gpuverify =") :]
    assert re.search(r"^FAIL\s.*test_bad_kernel_is_caught", summary, re.M), summary

    proc = sandbox.pytest("tests/test_negative.py")
    out = text(proc)
    assert proc.returncode == 1, out[-3000:]
    assert re.search(r"\b1 failed, 1 passed\b", out), out[-3000:]
    assert sandbox.artifact("positive_moe").verdict == "FAIL"
    assert sandbox.lock_files_free()


def test_fixtures_skip_without_gpu_verify(sandbox):
    import os
    import subprocess as sp
    import sys

    (sandbox.repo / "test_fixture_only.py").write_text(FIXTURE_TEST)
    proc = sp.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--strict-markers", "test_fixture_only.py"],
        cwd=sandbox.repo,
        capture_output=True,
        env=dict(os.environ),
    )
    assert proc.returncode == 0 and "run with --gpu-verify" in text(proc), text(proc)


def test_sigterm_takes_the_ctrl_c_path(sandbox):
    import signal

    proc = sandbox.start_sleeper()
    assert not sandbox.lock_files_free()
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=60)[0].decode(errors="replace")
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and art.reasons[0].startswith("interrupted (SIGTERM)"), output[-2000:]
    assert sandbox.lock_files_free()
    assert sandbox.command_gone()


def test_container_dying_mid_run_is_inconclusive(sandbox):
    proc = sandbox.start_sleeper()
    sandbox.client.containers.get(sandbox.container).kill()
    output = proc.communicate(timeout=60)[0].decode(errors="replace")
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and "container stopped during the run" in art.reasons[0], (
        art.reasons,
        output[-2000:],
    )
    assert sandbox.lock_files_free()


def _still_runs(sandbox, marker: str = "test_sleep.py") -> bool:
    c = sandbox.client.containers.get(sandbox.container)
    ps = c.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"]).output.decode()
    assert "infinity" in ps, f"could not list the container's processes: {ps!r}"  # PID 1 is sleep infinity
    return marker in ps


def test_kill_9_of_pytest_stops_the_command_before_the_lock_goes(sandbox):
    """The run's guard outlives pytest: it stops the command, and only then is the GPU free."""
    import signal

    proc = sandbox.start_sleeper()
    assert not sandbox.lock_files_free()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        free = sandbox.lock_files_free()
        runs = _still_runs(sandbox)  # read after the lock: a command seen now also ran then
        assert not (free and runs), "the GPU was free while the orphaned command still ran on it"
        if free or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert free and not runs, "the guard stopped the command, and the kernel dropped the lock with it"


def _host_runs(repo: Path) -> bool:
    """A process of this sandbox's command (``python3 op_tests/test_sleep.py`` in the repo) runs."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"op_tests/test_sleep.py" in argv and b"pytest" not in argv and (proc / "cwd").resolve() == repo:
                return True
        except OSError:
            continue  # a process that ended while we looked
    return False


def test_kill_9_of_pytest_stops_a_host_run_before_the_lock_goes(sandbox):
    import signal

    proc = sandbox.start_sleeper("--gpu-container", "none")
    repo = sandbox.repo.resolve()
    assert _host_runs(repo) and not sandbox.lock_files_free()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        free = sandbox.lock_files_free()
        runs = _host_runs(repo)
        assert not (free and runs), "the GPU was free while the orphaned command still ran on it"
        if free or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert free and not runs


def test_host_run_timeout_stops_the_command(sandbox):
    proc = sandbox.pytest("op_tests/test_sleep.py", "--gpu-container", "none", "--gpu-timeout", "2")
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and art.timed_out and art.reasons[0].startswith("timeout"), text(proc)[-2000:]
    assert art.duration_s < 30 and sandbox.lock_files_free()


def _container_tmp(sandbox) -> set:
    c = sandbox.client.containers.get(sandbox.container)
    out = c.exec_run(["sh", "-c", "find /tmp -mindepth 1 2>/dev/null"]).output.decode()
    return set(out.split())


def test_cold_run_leaves_no_cache_and_changes_nothing_else(sandbox):
    before_tmp = _container_tmp(sandbox)
    before_repo = sorted(str(p.relative_to(sandbox.repo)) for p in sandbox.repo.rglob("*") if ".git" not in p.parts)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-cold")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS" and art.cold and art.cache_reused is None, (art.reasons, text(proc)[-1500:])
    assert set(art.cache_dirs) == {"AITER_JIT_DIR", "TRITON_CACHE_DIR", "FLYDSL_RUNTIME_CACHE_DIR"}
    assert all(d.startswith("/tmp/gpuverify/cold/") for d in art.cache_dirs.values())
    raw = (sandbox.tickets / "T-1" / art.raw_output).read_text()
    assert "start build [module_gemm_a8w8]" in raw, "a cold run builds"
    after_tmp = _container_tmp(sandbox)
    assert not any(p.startswith("/tmp/gpuverify/cold/") for p in after_tmp), "the cold caches are removed"
    # besides the scratch folder, only the import probe (kept for the next session, named by its content)
    # and the emptied folder its records were read from
    added = {p for p in after_tmp - before_tmp if not p.startswith("/tmp/gpuverify/import-probe-")}
    assert added <= {"/tmp/gpuverify", "/tmp/gpuverify/cold", "/tmp/gpuverify/imports"}, added
    after_repo = sorted(str(p.relative_to(sandbox.repo)) for p in sandbox.repo.rglob("*") if ".git" not in p.parts)
    assert [p for p in after_repo if "__pycache__" not in p] == [p for p in before_repo if "__pycache__" not in p]
    ticket = sorted(p.name for p in (sandbox.tickets / "T-1").iterdir())
    # the artifact, its raw output and its attestation
    assert len(ticket) == 3 and {"bench_gemm_a8w8.json", "bench_gemm_a8w8.intoto.jsonl"} <= set(ticket), ticket


def test_warm_runs_reuse_the_worktree_cache(sandbox):
    sandbox.pytest("op_tests/test_gemm_a8w8.py", ticket="W-1")
    first = sandbox.artifact("gemm_a8w8", ticket="W-1")
    sandbox.pytest("op_tests/test_gemm_a8w8.py", ticket="W-2")
    second = sandbox.artifact("gemm_a8w8", ticket="W-2")
    assert first.verdict == second.verdict == "PASS"
    assert first.cache_reused is False and second.cache_reused is True
    assert first.cache_dirs == second.cache_dirs and not first.cold
    raw = (sandbox.tickets / "W-2" / second.raw_output).read_text()
    assert "import [module_gemm_a8w8]" in raw and "start build" not in raw, "the second run found its build"


def test_each_worktree_gets_its_own_warm_cache(sandbox):
    """A/B work on one host (a base worktree and a head worktree of the same repo): each side builds
    into its own cache, so neither reuses a build the other made."""
    subprocess.run(["git", "-C", str(sandbox.repo), "worktree", "add", "-q", "wt-b"], check=True)
    with open(sandbox.repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write("/wt-b/\n")  # the side's checkout sits in the mounted tree; the base stays clean
    sandbox.pytest("op_tests/test_gemm_a8w8.py", ticket="AB-A")
    sandbox.pytest("wt-b/op_tests/test_gemm_a8w8.py", ticket="AB-B")
    side_a, side_b = sandbox.artifact("gemm_a8w8", ticket="AB-A"), sandbox.artifact("gemm_a8w8", ticket="AB-B")
    assert side_a.verdict == side_b.verdict == "PASS", (side_a.reasons, side_b.reasons)
    assert side_b.imports["aiter"].startswith("/workspace/aiter/wt-b/"), side_b.imports
    assert side_a.cache_reused is False and side_b.cache_reused is False, "B found A's build"
    assert set(side_a.cache_dirs.values()).isdisjoint(side_b.cache_dirs.values())
    raw_b = (sandbox.tickets / "AB-B" / side_b.raw_output).read_text()
    assert "start build [module_gemm_a8w8]" in raw_b, "side B builds into its own cache"


def test_a_session_reads_the_gpus_through_the_amdsmi_library(sandbox):
    """ROCM_PATH at the simulated host: the sampler and the re-check under the lock read in-process."""
    from pytest_gpuverify.simulator import load_state, save_state

    state = load_state(sandbox.state_path)
    for i in (0, 1, 3):
        state.set_busy(i, pid=700 + i)
    save_state(state, sandbox.state_path)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "-v", env={"ROCM_PATH": str(sandbox.sim_bin)})
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS" and art.gpu.index == 2, (art.reasons, text(proc)[-2000:])
    assert "readings  amdsmi library, in-process" in text(proc)  # the doctor's lines head a -v run


HOT = """
import json, os, time
import aiter
from aiter import logger

aiter.report_environment()
logger.info("[perf] dim: (4, 32, 8192)      dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, "
            "uplift: 157.0%[checkAllclose atol=0.01 rtol=0.01 passed~]")
# busy to its last moment: the GPU's utilisation figure still shows this load for a while after the end
path = os.environ["HOT_STATE"]
with open(path) as fh:
    state = json.load(fh)
for gpu in state["gpus"]:
    gpu["use_pct"], gpu["use_until"] = 100, time.time() + 0.4
with open(path + ".tmp", "w") as fh:
    json.dump(state, fh)
os.replace(path + ".tmp", path)
"""


def test_targets_busy_to_their_last_moment_run_back_to_back_on_one_gpu(sandbox):
    """Each command leaves its load in the next re-check's utilisation figure (as NVML's window does on
    an H200): the session's own load never refuses its next target."""
    from pytest_gpuverify.simulator import load_state, save_state

    state = load_state(sandbox.state_path)
    del state.gpus[1:]
    save_state(state, sandbox.state_path)
    sandbox.rewrite_env(gpus=1)
    names = [f"hot_{c}" for c in "abcd"]
    for name in names:
        (sandbox.repo / "op_tests" / f"test_{name}.py").write_text(HOT)
    subprocess.run(["git", "-C", str(sandbox.repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "hot"],
        check=True,
    )
    proc = sandbox.pytest(
        *(f"op_tests/test_{n}.py" for n in names),
        "--gpu-container",
        "none",
        "--gpu-wait",
        "0",
        env={"HOT_STATE": str(sandbox.state_path)},
    )
    verdicts = {n: (sandbox.artifact(n).verdict, sandbox.artifact(n).reasons) for n in names}
    assert all(v == "PASS" for v, _ in verdicts.values()), (verdicts, text(proc)[-3000:])
    assert load_state(sandbox.state_path).gpus[0].use_until is not None, "the targets left their load behind"
