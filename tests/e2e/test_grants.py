"""GPUs granted outside the plugin (Slurm's gres, a CI job's visibility variables): the pick, the lock
and the command use only those, and the artifact says who granted what. Sessions run on the simulated
ROCm host (4 GPUs) with a real container, one sandbox for the module."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

import pytest
from sandboxes import make_sandbox
from session_cmd import PYTEST

from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.grants import GrantProblem, read_grant, visible_within
from pytest_gpuverify.simulator import SimState, install

pytestmark = pytest.mark.docker
UUIDS = {f"GPU-{0x8D1457E2C20F0000 + i:016x}": i for i in range(4)}  # the simulator's UUIDs
NO_GRANT = (
    "SLURM_STEP_GPUS",
    "SLURM_JOB_GPUS",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
)


@pytest.fixture(scope="module")
def box(tmp_path_factory, docker_client):
    with make_sandbox(tmp_path_factory.mktemp("grants") / "host", docker_client) as sandbox:
        yield sandbox


def run(box, ticket: str, grant: dict, *args: str):
    env = {k: v for k, v in os.environ.items() if k not in NO_GRANT}
    env.update(grant)
    cmd_env = dict(env, PATH=f"{box.sim_bin}:{env['PATH']}")
    proc = subprocess.run(
        [
            *PYTEST,
            "--gpu-verify",
            "--gpu-window",
            "0.3",
            "--gpu-env",
            str(box.env_path),
            "--ticket",
            ticket,
            "op_tests/test_rmsnorm2d.py",
            *args,
        ],
        cwd=box.repo,
        env=cmd_env,
        capture_output=True,
        timeout=300,
    )
    text = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    return box.artifact("rmsnorm2d", ticket=ticket), text


# -- reading the grant -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "grant, vendor, expected, source",
    [
        (
            {"SLURM_STEP_GPUS": "2,3", "SLURM_JOB_GPUS": "0,1,2,3", "CUDA_VISIBLE_DEVICES": "0,1"},
            "rocm",
            [2, 3],
            "SLURM_STEP_GPUS",
        ),
        ({"SLURM_JOB_GPUS": "1-2", "ROCR_VISIBLE_DEVICES": "0,1"}, "rocm", [1, 2], "SLURM_JOB_GPUS"),
        ({"ROCR_VISIBLE_DEVICES": "3,1", "CUDA_VISIBLE_DEVICES": "0"}, "rocm", [3, 1], "ROCR_VISIBLE_DEVICES"),
        ({"HIP_VISIBLE_DEVICES": "GPU-8d1457e2c20f0002"}, "rocm", [2], "HIP_VISIBLE_DEVICES"),
        ({"CUDA_VISIBLE_DEVICES": "1"}, "rocm", [1], "CUDA_VISIBLE_DEVICES"),
        ({"CUDA_VISIBLE_DEVICES": "0,3", "ROCR_VISIBLE_DEVICES": "2"}, "nvidia", [0, 3], "CUDA_VISIBLE_DEVICES"),
        ({"CUDA_VISIBLE_DEVICES": ""}, "nvidia", [], "CUDA_VISIBLE_DEVICES"),
    ],
)
def test_the_grant_is_read_from_the_first_variable_that_names_it(grant, vendor, expected, source):
    record = read_grant(grant, vendor, UUIDS, on_host=False, host_gpus=4)
    assert record is not None and record.granted == expected and record.read_from == source
    assert record.renumbered_by is None and record.variables == grant


def test_no_variable_no_grant():
    assert read_grant({"PATH": "/bin", "ROCR_VISIBLE_DEVICES": "1"}, "nvidia", {}, False, 4) is None
    assert read_grant({}, "rocm", {}, False, 4) is None


def test_a_slurm_job_is_named_and_a_host_command_counts_within_rocr():
    record = read_grant(
        {"SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "1,3", "ROCR_VISIBLE_DEVICES": "1,3"},
        "rocm",
        UUIDS,
        on_host=True,
        host_gpus=4,
    )
    assert record is not None and (record.kind, record.job_id, record.renumbered_by) == (
        "slurm",
        "41",
        "ROCR_VISIBLE_DEVICES",
    )
    assert visible_within([3], record) == [1] and visible_within([1, 3], record) == [0, 1]
    in_container = read_grant(
        {"SLURM_STEP_GPUS": "1,3", "ROCR_VISIBLE_DEVICES": "1,3", "SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0"},
        "rocm",
        UUIDS,
        False,
        4,
    )
    assert visible_within([3], in_container) is None, "a container inherits nothing: node indices"


@pytest.mark.parametrize(
    "grant, words",
    [
        ({"SLURM_STEP_GPUS": "5", "SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0"}, "names GPU(s) 5, but this host has 4"),
        ({"ROCR_VISIBLE_DEVICES": "GPU-ffff"}, "is neither a GPU index nor a UUID"),
        ({"CUDA_VISIBLE_DEVICES": "1,1"}, "names a GPU twice"),
    ],
)
def test_a_grant_the_host_cannot_have_is_one_line_naming_the_variable(grant, words):
    with pytest.raises(GrantProblem) as err:
        read_grant(grant, "rocm", UUIDS, on_host=False, host_gpus=4)
    text = str(err.value)
    assert words in text and next(iter(grant)) in text and "Fix:" in text and "\n" not in text


def test_the_simulator_applies_rocr_then_hip_as_the_runtime_does(tmp_path):
    """A process with ROCR_VISIBLE_DEVICES=1,3 and HIP_VISIBLE_DEVICES=1 runs on the node's GPU 3."""
    install(tmp_path, SimState.idle(gpus=4, arch="gfx942"))
    env = dict(os.environ, ROCR_VISIBLE_DEVICES="1,3", HIP_VISIBLE_DEVICES="1")
    user = subprocess.Popen([str(tmp_path / "gpuverify-sim-use"), "512", "sleep", "30"], env=env)
    try:
        tools = {k: v for k, v in os.environ.items() if "VISIBLE" not in k and k != "GPUVERIFY_SIM_STATE"}
        backend = RocmBackend(LocalHost(env=dict(tools, PATH=f"{tmp_path}:{tools['PATH']}")), use_library=False)
        deadline = time.monotonic() + 10
        while True:  # until the process has exec'd its command (its environment names the state)
            on = [r.index for r in backend.read() if user.pid in [p.pid for p in r.processes]]
            if on or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert on == [3]
    finally:
        user.kill()
        user.wait()


# -- sessions on the simulated host ----------------------------------------------------------------


@pytest.mark.parametrize(
    "variable", ["SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
)
def test_the_pick_is_among_the_granted_gpus(box, variable):
    """GPU 2 granted: the builtin picker would take GPU 0, the first idle one."""
    ticket = f"G-{variable.split('_')[0]}-{variable.split('_')[1]}"
    grant = (
        {variable: "2", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"} if variable.startswith("SLURM") else {variable: "2"}
    )
    art, text = run(box, ticket, grant)
    assert art.verdict == "PASS", (art.reasons, text[-2000:])
    assert [g.index for g in art.gpus] == [2] and art.gpus[0].lock_path.endswith("gpu-2.lock")
    assert art.env["HIP_VISIBLE_DEVICES"] == "2", "in the container the command sees the node's index"
    assert art.scheduler is not None and art.scheduler.granted == [2] and art.scheduler.read_from == variable
    assert art.scheduler.kind == ("slurm" if variable.startswith("SLURM") else "environment")
    assert any("granted GPU(s) 2" in n for n in art.notes)
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_gpuverify.cli.main",
            "check",
            str(box.tickets / ticket / "bench_rmsnorm2d.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_locked_granted_gpu_sends_the_pick_to_the_next_granted_one_never_outside(box):
    with open(box.spec.locks / "gpu-1.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        art, text = run(box, "G-LOCKED", {"SLURM_STEP_GPUS": "1,3", "SLURM_JOB_ID": "78", "SLURM_STEP_ID": "0"})
        assert art.verdict == "PASS" and [g.index for g in art.gpus] == [3], (art.reasons, text[-2000:])
        art, text = run(box, "G-ONLY", {"SLURM_STEP_GPUS": "1", "SLURM_JOB_ID": "79", "SLURM_STEP_ID": "0"})
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    reason = " ".join(art.reasons)
    assert "NO_GPU" in reason and "granted by slurm job 79 (SLURM_STEP_GPUS)" in reason, art.reasons


def test_a_host_command_under_rocr_counts_within_the_grant_and_check_agrees(box):
    art, text = run(
        box,
        "G-HOST",
        {"SLURM_STEP_GPUS": "1,3", "ROCR_VISIBLE_DEVICES": "1,3", "SLURM_JOB_ID": "80", "SLURM_STEP_ID": "0"},
        "--gpu-container",
        "none",
    )
    assert art.verdict == "PASS", (art.reasons, text[-2000:])
    assert [g.index for g in art.gpus] == [1] and art.env["HIP_VISIBLE_DEVICES"] == "0"
    assert art.scheduler is not None and art.scheduler.renumbered_by == "ROCR_VISIBLE_DEVICES"
    path = box.tickets / "G-HOST" / "bench_rmsnorm2d.json"
    check = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(path)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    tampered = path.read_text().replace('"HIP_VISIBLE_DEVICES": "0"', '"HIP_VISIBLE_DEVICES": "1"')
    fake = path.with_name("bench_rmsnorm2d_t.json")
    fake.write_text(tampered)
    check = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(fake)], capture_output=True, text=True
    )
    fake.unlink()
    assert check.returncode != 0 and "HIP_VISIBLE_DEVICES" in check.stdout + check.stderr


def test_a_grant_naming_a_gpu_the_host_lacks_blocks_every_target_with_its_line(box):
    art, text = run(box, "G-BAD", {"SLURM_STEP_GPUS": "6", "SLURM_JOB_ID": "81", "SLURM_STEP_ID": "0"})
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    assert any("SLURM_STEP_GPUS='6' names GPU(s) 6, but this host has 4" in r for r in art.reasons), art.reasons
