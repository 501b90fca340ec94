"""Fresh containers and builds end to end: a Containers row `run` starts a fresh container per locked run
(real Docker Engine, simulated ROCm host), and a declaration's builds run before its targets."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid

import pytest
from fresh_containers import foreign, mine, sleeping_in_fresh_container, use_run_row
from kernel_repos import out, sim_env, verify_argv

from pytest_gpuverify.cli import demo
from pytest_gpuverify.cli.handoff import build_handoff
from pytest_gpuverify.place.ephemeral import RUN_LABEL, remove_own
from pytest_gpuverify.records.artifact import sha256_file
from pytest_gpuverify.verify.check import check_artifact

pytestmark = pytest.mark.docker


def declare(repo, text: str) -> None:
    (repo / "gpuverify.toml").write_text(text, encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "declare"], check=True
    )


def test_run_row_starts_a_fresh_container_and_removes_only_its_own(sandbox):
    use_run_row(sandbox)
    other = foreign(sandbox, f"gpuverify-run-{uuid.uuid4().hex[:8]}", "another-session")
    before = mine(sandbox)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", out(proc)
    fresh = art.fresh_container
    assert fresh is not None and fresh.row == "run" and art.container == fresh.name.strip()
    assert art.container.startswith("gpuverify-run-") and art.container != other.name
    image = sandbox.client.images.get(demo.ROOTFS_IMAGE)
    assert art.image == demo.ROOTFS_IMAGE and fresh.image_id == image.id
    assert art.image_digest == (image.attrs.get("RepoDigests") or [image.id])[0]
    # the checks of a named container ran in it: arch, and aiter imported from the worktree mounted there
    assert art.gpu.arch == "gfx942" and art.imports["aiter"].startswith("/workspace/aiter/")
    assert f"{sandbox.repo}:/workspace/aiter:rw" in fresh.mounts
    # no GPU device files on this machine: none passed, each named as missing, nothing invented
    assert fresh.devices == [] and "/dev/kfd" in fresh.devices_missing and fresh.visible is None
    assert art.env["HIP_VISIBLE_DEVICES"] == str(art.gpu.index)
    assert fresh.removed is True
    assert sandbox.client.containers.list(all=True, filters={"name": art.container}) == []
    assert mine(sandbox) == before, "only the run's own container came and went"
    other.reload()
    assert other.status == "running" and other.labels[RUN_LABEL] == "another-session"
    assert check_artifact(art, sandbox.tickets / "T-1" / "bench_gemm_a8w8.json") == []
    assert sandbox.lock_files_free()


@pytest.mark.parametrize("how", ["container dies", "Ctrl-C"])
def test_fresh_container_exists_during_the_run_and_is_gone_after_a_death_or_ctrl_c(sandbox, how):
    use_run_row(sandbox)
    proc, container = sleeping_in_fresh_container(sandbox)
    try:
        assert container.status == "running" and container.labels[RUN_LABEL]
        assert not sandbox.lock_files_free(), "the GPU lock is held while the container runs"
        if how == "Ctrl-C":
            proc.send_signal(signal.SIGINT)
        else:
            container.kill()  # the container dies under the command
        output = proc.communicate(timeout=120)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE", output[-3000:]
    if how == "Ctrl-C":
        assert art.run.interrupted == "Ctrl-C" and not art.run.container_died, art.reasons
    else:
        assert art.run.container_died and art.reasons[0] == "the container stopped during the run", art.reasons
    assert art.container == container.name and (sandbox.tickets / "T-1" / art.raw_output).exists()
    assert art.fresh_container.removed is True
    assert sandbox.client.containers.list(all=True, filters={"name": container.name}) == []
    assert sandbox.lock_files_free()


def test_a_run_row_whose_image_is_missing_is_inconclusive_and_starts_nothing(sandbox):
    use_run_row(sandbox)
    missing = f"gv-14b-missing-{uuid.uuid4().hex[:8]}:none"
    sandbox.env_path.write_text(
        sandbox.env_path.read_text().replace(f"| run | {demo.ROOTFS_IMAGE} |", f"| run | {missing} |")
    )
    before = mine(sandbox)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE", out(proc)
    assert art.reasons[0] == f"image {missing} of the `run` row is not on this host. Fix: `docker pull {missing}`"
    assert not art.run.ran and mine(sandbox) == before
    assert sandbox.lock_files_free()


def test_remove_own_never_removes_another_runs_container(sandbox):
    other = foreign(sandbox, f"gpuverify-run-{uuid.uuid4().hex[:8]}", "run-A")
    plain = f"gv-14b-{uuid.uuid4().hex[:8]}"
    sandbox.start_container(plain)
    assert remove_own(sandbox.client, other.name, "run-B") is False
    assert remove_own(sandbox.client, plain, "run-B") is False
    assert {c.name for c in sandbox.client.containers.list()} >= {other.name, plain}
    assert remove_own(sandbox.client, other.name, "run-A") is True  # its own run may
    assert sandbox.client.containers.list(all=True, filters={"name": other.name}) == []


TARGETS = """
[[targets]]
name = "gemm"
path = "op_tests/test_gemm_a8w8.py"

[[targets]]
name = "rms"
path = "op_tests/test_rmsnorm2d.py"
"""


def test_a_failed_build_makes_its_targets_inconclusive_and_they_never_run(sandbox):
    declare(sandbox.repo, '[[builds]]\nname = "kernels"\ncommand = ["sh", "-c", "echo compiling; exit 3"]\n' + TARGETS)
    proc = sandbox.pytest("--gpu-target", "gemm", "--gpu-target", "rms")
    folder = sandbox.tickets / "T-1"
    logs = sorted(folder.glob("build_kernels.*.log"))
    assert len(logs) == 1, "the build ran once for the session"
    assert logs[0].read_text().startswith("compiling")
    for topic in ("gemm", "rms"):
        art = sandbox.artifact(topic)
        assert art.verdict == "INCONCLUSIVE", out(proc)
        assert art.reasons[0] == "build failed: sh -c 'echo compiling; exit 3' exited 3"
        assert not art.run.ran and art.raw_output is None and art.command is None
        [build] = art.builds
        assert build.exit_code == 3 and build.output == logs[0].name and build.output_sha256 == sha256_file(logs[0])
        assert build.container == sandbox.container
        assert check_artifact(art, folder / f"bench_{topic}.json") == []
    assert not list(folder.glob("bench_*.log")), "no target wrote a raw output"
    ran = sandbox.exec_ids()
    assert any("compiling" in c for c in ran) and not any(
        "test_gemm_a8w8" in c or "test_rmsnorm2d" in c for c in ran
    ), ran
    assert proc.returncode == 1


def test_passing_builds_are_recorded_in_each_artifact_and_the_handoff(sandbox):
    declare(
        sandbox.repo,
        '[[builds]]\nname = "kernels"\ncommand = ["sh", "-c", "echo built in $PWD"]\n'
        '[[builds]]\nname = "tune"\ngpu = true\ncommand = ["sh", "-c", "echo tuned on gpu $HIP_VISIBLE_DEVICES"]\n'
        + TARGETS,
    )
    proc = sandbox.pytest("--gpu-target", "gemm", "--gpu-target", "rms")
    folder = sandbox.tickets / "T-1"
    [kernels_log] = folder.glob("build_kernels.*.log")
    [tune_log] = folder.glob("build_tune.*.log")
    assert kernels_log.read_text() == "built in /workspace/aiter\n"
    records = []
    for topic in ("gemm", "rms"):
        art = sandbox.artifact(topic)
        assert art.verdict == "PASS", out(proc)
        kernels, tune = art.builds
        assert (kernels.name, kernels.exit_code, kernels.gpu, kernels.gpus) == ("kernels", 0, False, [])
        assert kernels.output_sha256 == sha256_file(kernels_log) and kernels.output == kernels_log.name
        assert tune.gpu and len(tune.gpus) == 1 and tune_log.read_text() == f"tuned on gpu {tune.gpus[0]}\n"
        assert check_artifact(art, folder / f"bench_{topic}.json") == []
        records.append(art.builds)
    assert records[0] == records[1], "one build, recorded in each artifact that stood on it"
    doc = build_handoff(folder)
    commands = [(c.command, c.exitCode) for c in doc.verification.commandsRun]
    assert commands[:2] == [("sh -c 'echo built in $PWD'", 0), ("sh -c 'echo tuned on gpu $HIP_VISIBLE_DEVICES'", 0)]
    assert "targets: gemm, rms" in doc.verification.commandsRun[0].observation
    assert len(commands) == 4  # and the two targets


def test_check_names_an_edited_build_output(sandbox):
    declare(sandbox.repo, '[[builds]]\nname = "kernels"\ncommand = ["sh", "-c", "echo built"]\n' + TARGETS)
    sandbox.pytest("--gpu-target", "gemm")
    folder = sandbox.tickets / "T-1"
    art = sandbox.artifact("gemm")
    assert check_artifact(art, folder / "bench_gemm.json") == []
    (folder / art.builds[0].output).write_text("built, honestly\n")
    assert any(p.startswith("build kernels: output sha256") for p in check_artifact(art, folder / "bench_gemm.json"))


def test_a_build_runs_in_the_fresh_container(sandbox):
    use_run_row(sandbox)
    declare(
        sandbox.repo, '[[builds]]\nname = "kernels"\ncommand = ["sh", "-c", "echo built in $(hostname)"]\n' + TARGETS
    )
    proc = sandbox.pytest("--gpu-target", "gemm")
    art = sandbox.artifact("gemm")
    assert art.verdict == "PASS", out(proc)
    assert art.builds[0].container == art.container == art.fresh_container.name
    assert art.fresh_container.removed


def test_ctrl_c_during_a_gpu_build_stops_it_records_it_and_runs_no_target(sandbox):
    declare(
        sandbox.repo,
        '[[builds]]\nname = "slow"\ngpu = true\ncommand = ["sh", "-c", "echo building; sleep 61"]\n' + TARGETS,
    )
    cmd = verify_argv(sandbox, "--gpu-target", "gemm")
    proc = subprocess.Popen(
        cmd,
        cwd=sandbox.repo,
        env=sim_env(sandbox),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    folder = sandbox.tickets / "T-1"
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not any(
            b"building" in p.read_bytes() for p in folder.glob("build_slow.*.log")
        ):
            time.sleep(0.1)
        assert not sandbox.lock_files_free(), "a gpu = true build holds a GPU lock"
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    art = sandbox.artifact("gemm")
    assert art.verdict == "INCONCLUSIVE" and art.run.interrupted == "Ctrl-C" and not art.run.ran, output[-3000:]
    [build] = art.builds
    assert build.problem == "interrupted (Ctrl-C)" and build.gpu and len(build.gpus) == 1
    assert check_artifact(art, folder / "bench_gemm.json") == []
    assert sandbox.command_gone("sleep 61") and sandbox.lock_files_free()


def test_doctor_reads_a_run_row_as_an_image(sandbox):
    use_run_row(sandbox)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(sandbox.env_path)],
        capture_output=True,
        env=sim_env(sandbox),
    )
    text = proc.stdout.decode() + proc.stderr.decode()
    image = sandbox.client.images.get(demo.ROOTFS_IMAGE)
    assert f"container run: a fresh container per run, image {demo.ROOTFS_IMAGE} ({image.id})" in text, text
    assert "container run is missing" not in text and proc.returncode == 0, text
