"""What ran, end to end on the simulated host in real containers: the package under test of a plain
pytest repo (src layout), a GPU shared with a process that takes no lock, a command's own GPU worker,
and a build that rewrites tracked files."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid

import pytest
from kernel_repos import commit, out, run_in
from probe_paths import without_probe

from pytest_gpuverify.cli import demo
from pytest_gpuverify.simulator import load_state, save_state
from pytest_gpuverify.verify.check import check_artifact

pytestmark = pytest.mark.docker


def kernel_repo(sandbox, site=None, container_pythonpath=None):
    """kernelkit in src layout with a pyproject.toml, in a container whose own PYTHONPATH may name an
    installed copy (``site``, mounted at /opt/site) or the checkout's src folder."""
    repo = demo.make_repo(sandbox.root / "repos" / "kernelkit", demo.DEMO_REPOS / "kernelkit")
    (repo / "src").mkdir()
    (repo / "kernelkit").rename(repo / "src" / "kernelkit")
    (repo / "pyproject.toml").write_text('[project]\nname = "kernelkit"\nversion = "0.1"\n')
    (repo / "pytest.ini").write_text("[pytest]\ngpu_pytest_paths = tests/test_*.py\n")
    commit(repo, "src layout")
    name = f"gv-kk-{uuid.uuid4().hex[:8]}"
    mounts = {str(repo): "/workspace/kernelkit", **({str(site): "/opt/site"} if site else {})}
    demo.start_container(
        sandbox.client,
        name,
        sandbox.sim_bin,
        mounts,
        env={"PYTHONPATH": container_pythonpath} if container_pythonpath else None,
    )
    sandbox.extra_containers.append(name)
    demo.install_pytest(sandbox.client, name)
    sandbox.rewrite_env(
        repo_rows=[*sandbox.spec.repo_rows, ("kernelkit", repo, name, "/workspace/kernelkit")],
        containers=[*sandbox.spec.containers, (name, demo.ROOTFS_IMAGE)],
    )
    return repo


def artifact(sandbox, topic):
    path = sandbox.tickets / "T-1" / f"bench_{topic}.json"
    art = sandbox.artifact(topic)
    assert check_artifact(art, path) == [], "gpuverify check must re-derive the same artifact"
    return art


def test_a_src_layout_package_from_an_installed_copy_is_inconclusive(sandbox, tmp_path):
    site = tmp_path / "site"
    (site / "kernelkit").mkdir(parents=True)
    (site / "kernelkit" / "__init__.py").write_text("def add(a, b):\n    return [x + y for x, y in zip(a, b)]\n")
    repo = kernel_repo(sandbox, site=site, container_pythonpath="/opt/site")
    proc = run_in(sandbox, repo, "tests/test_add.py")
    art = artifact(sandbox, "add")
    assert art.verdict == "INCONCLUSIVE", (art.reasons, out(proc))
    assert art.imports == {"kernelkit": "/opt/site/kernelkit/__init__.py"}
    # the command ran, and its own record of its imports decides: it took the installed copy
    assert art.reasons[0] == (
        "kernelkit was imported from /opt/site/kernelkit/__init__.py, outside the worktree "
        "/workspace/kernelkit/, not from its own /workspace/kernelkit/src/kernelkit/__init__.py: "
        "the run tested another copy"
    )
    record = art.import_origins["kernelkit"]
    assert (record.seen, record.observed, record.predicted) == (
        "imported",
        "/opt/site/kernelkit/__init__.py",
        "/opt/site/kernelkit/__init__.py",
    )
    assert art.run.ran and art.run.imports_outside == art.reasons[:1]


def test_a_src_layout_package_from_the_checkout_passes_and_pytest_gets_no_columns(sandbox):
    repo = kernel_repo(sandbox, container_pythonpath="/workspace/kernelkit/src")  # as an editable install
    proc = run_in(sandbox, repo, "tests/test_add.py")
    art = artifact(sandbox, "add")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert art.imports == {"kernelkit": "/workspace/kernelkit/src/kernelkit/__init__.py"}
    # the place's own PYTHONPATH is kept after the worktree's, not replaced
    assert without_probe(art.env["PYTHONPATH"]) == "/workspace/kernelkit:/workspace/kernelkit/src"
    assert not {"COLUMNS", "GPU_ARCHS", "AITER_JIT_DIR"} & set(art.env), art.env
    [watch] = art.watch
    assert watch.foreign == [] and watch.samples >= 1
    # the simulated host reads through the tools here: clocks come from the amdsmi library only, and it says so
    assert watch.clocks == [] and watch.problems[0].startswith("clocks: clocks are read through the amdsmi library")


def test_a_foreign_process_mid_run_is_inconclusive_the_commands_own_worker_is_not(sandbox, tmp_path):
    repo = kernel_repo(sandbox, container_pythonpath="/workspace/kernelkit/src")
    (repo / "tests" / "test_a_own.py").write_text(
        "import subprocess\n\ndef test_own_worker():\n"
        "    subprocess.run(['gpuverify-sim-use', '2048', 'sleep', '2'], check=True)\n"
    )
    (repo / "tests" / "test_b_foreign.py").write_text("import time\n\ndef test_slow():\n    time.sleep(4)\n")
    commit(repo, "a worker of its own, and a slow test")
    foreign = subprocess.Popen(["sleep", "60"])
    try:

        def share_when_b_runs():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not list((sandbox.tickets / "T-1").glob("bench_b_foreign.*.log")):
                time.sleep(0.1)
            time.sleep(1.0)
            state = load_state(sandbox.state_path)
            for i in range(len(state.gpus)):  # whichever it locked: another user's job on every GPU
                state.set_busy(i, pid=foreign.pid, name="sleep", vram_bytes=60 << 30)
            save_state(state, sandbox.state_path)

        sharer = threading.Thread(target=share_when_b_runs, daemon=True)
        sharer.start()
        proc = run_in(sandbox, repo, "tests/test_a_own.py", "tests/test_b_foreign.py")
        sharer.join(5)
    finally:
        foreign.kill()
        foreign.wait()
    own = artifact(sandbox, "a_own")
    assert own.verdict == "PASS", (own.reasons, out(proc))
    shared = artifact(sandbox, "b_foreign")
    assert shared.verdict == "INCONCLUSIVE", (shared.reasons, out(proc))
    gpu = shared.gpu.index
    assert shared.reasons[0].startswith(
        f"gpu {gpu} was shared during the run: pid {foreign.pid} (sleep, user root, 60 GiB) from "
    ), shared.reasons
    [watch] = shared.watch
    assert [(p.pid, p.gpu) for p in watch.foreign] == [(foreign.pid, gpu)]
    path = sandbox.tickets / "T-1" / "bench_b_foreign.json"
    for edit, said in (
        ({"run": shared.run.model_copy(update={"shared": []})}, "run.shared does not match"),
        ({"watch": []}, "watch is empty, but the command ran"),
        ({"env": {**shared.env, "COLUMNS": "10000"}}, "env.COLUMNS is "),
        ({"imports": {"kernelkit": "/opt/site/kernelkit/__init__.py"}}, "imports.kernelkit is "),
    ):
        problems = check_artifact(shared.model_copy(update=edit), path)
        assert any(said in p for p in problems), (edit.keys(), problems)


def test_another_exec_in_the_runs_own_container_is_foreign_the_commands_worker_is_not(sandbox):
    """A long-lived dev container, shared: while the run's command (and its own GPU worker) runs in it, a
    teammate's job starts in the same container by another `docker exec` and takes the held GPU."""
    repo = kernel_repo(sandbox, container_pythonpath="/workspace/kernelkit/src")
    container = sandbox.spec.repo_rows[-1][2]
    (repo / "tests" / "test_shared.py").write_text(
        "import subprocess\n\ndef test_with_a_worker():\n"
        "    subprocess.run(['gpuverify-sim-use', '2048', 'sleep', '5'], check=True)\n"
    )
    commit(repo, "a worker of its own, for a while")

    def teammate_when_the_run_runs():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list((sandbox.tickets / "T-1").glob("bench_shared.*.log")):
            time.sleep(0.1)
        time.sleep(1.0)
        job = sandbox.client.api.exec_create(container, ["gpuverify-sim-use", "61440", "sleep", "30.5"])["Id"]
        sandbox.client.api.exec_start(job, detach=True)

    teammate = threading.Thread(target=teammate_when_the_run_runs, daemon=True)
    teammate.start()
    proc = run_in(sandbox, repo, "tests/test_shared.py")
    teammate.join(5)
    art = artifact(sandbox, "shared")
    assert art.verdict == "INCONCLUSIVE", (art.reasons, out(proc))
    [watch] = art.watch
    [job] = watch.foreign
    with open(f"/proc/{job.pid}/cmdline", "rb") as fh:
        assert fh.read() == b"sleep\x0030.5\x00", "the teammate's job, and nothing of the run's"
    assert job.gpu == art.gpu.index and job.vram_mib == 61440
    assert art.reasons[0].startswith(
        f"gpu {job.gpu} was shared during the run: pid {job.pid} (sleep, user root, 60 GiB) from "
    ), art.reasons


def test_a_build_that_rewrites_tracked_files_is_inconclusive_or_recorded_dirty(sandbox):
    repo = kernel_repo(sandbox, container_pythonpath="/workspace/kernelkit/src")
    (repo / "gpuverify.toml").write_text(
        '[[builds]]\nname = "stamp"\ncommand = ["sh", "-c", "echo \'VERSION = 2\' >> src/kernelkit/__init__.py"]\n'
        '[[targets]]\nname = "add"\nkind = "pytest"\npath = "tests/test_add.py"\n'
    )
    commit(repo, "a build that stamps a version")
    proc = run_in(sandbox, repo, "--gpu-target", "add")
    art = artifact(sandbox, "add")
    assert art.verdict == "INCONCLUSIVE", (art.reasons, out(proc))
    assert art.reasons[0].startswith(f"the builds changed tracked files of {repo}: src/kernelkit/__init__.py: ")
    subprocess.run(["git", "-C", str(repo), "checkout", "--", "."], check=True)
    proc = run_in(sandbox, repo, "--gpu-target", "add", "--gpu-allow-dirty", ticket="T-2")
    art = sandbox.artifact("add", ticket="T-2")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    [record] = art.repos
    assert record.state == "after the builds" and record.changed_by_builds == ["src/kernelkit/__init__.py"]
    assert record.dirty and "src/kernelkit/__init__.py" in record.dirty_paths
