"""Any kernel repo's own pytest files as GPU targets, end to end in a real container:
declared with ``kind = "pytest"`` (a file or a folder), or made targets by the ini's
``gpu_pytest_paths`` globs. The repo is neither aiter nor FlyDSL (``tests/test_*.py``)."""

from __future__ import annotations

import uuid

import pytest
from kernel_repos import commit, declare, out, run_in

from pytest_gpuverify.cli import demo
from pytest_gpuverify.verify.check import check_artifact

pytestmark = pytest.mark.docker
MISMATCH = "Mismatched elements: 1024 / 1024 (100.0%)"


@pytest.fixture
def kernelkit(sandbox):
    """A plain kernel repo and its own container (with pytest, as real ROCm images have)."""
    repo = demo.make_repo(sandbox.root / "repos" / "kernelkit", demo.DEMO_REPOS / "kernelkit")
    name = f"gv-kk-{uuid.uuid4().hex[:8]}"
    sandbox.start_container(name, mounts={str(repo): "/workspace/kernelkit"})
    demo.install_pytest(sandbox.client, name)
    sandbox.rewrite_env(
        repo_rows=[*sandbox.spec.repo_rows, ("kernelkit", repo, name, "/workspace/kernelkit")],
        containers=[*sandbox.spec.containers, (name, demo.ROOTFS_IMAGE)],
    )
    return repo


def checked(sandbox, topic: str):
    path = sandbox.tickets / "T-1" / f"bench_{topic}.json"
    art = sandbox.artifact(topic)
    assert check_artifact(art, path) == [], "gpuverify check must re-derive the same artifact"
    return art


def test_declared_pytest_file_and_folder(sandbox, kernelkit):
    declare(kernelkit, "pytest")
    proc = run_in(sandbox, kernelkit, "gpuverify.toml")
    art = checked(sandbox, "add")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert art.target.kind == "pytest" and art.command.startswith("python3 -m pytest tests/test_add.py -q -rA")
    assert art.correctness.shapes_checked == 3 and art.correctness.checks_failed == 0
    assert art.junit_xml and (sandbox.tickets / "T-1" / art.junit_xml).exists()
    assert art.imports == {} and art.env["PYTHONPATH"] == "/workspace/kernelkit"
    folder = checked(sandbox, "all-tests")
    assert folder.command.startswith("python3 -m pytest tests -q -rA")
    assert folder.verdict == "FAIL", (folder.reasons, out(proc))
    assert any("test_add_wrong[1024]" in r and MISMATCH in r for r in folder.reasons), folder.reasons
    assert folder.correctness.shapes_checked == 4 and folder.correctness.checks_failed == 1


def test_gpu_pytest_paths_make_test_files_targets(sandbox, kernelkit):
    (kernelkit / "pytest.ini").write_text("[pytest]\ngpu_pytest_paths =\n    tests/test_*.py\n")
    commit(kernelkit, "GPU test files by glob")
    proc = run_in(sandbox, kernelkit, "tests/test_add.py", "tests/test_mismatch.py")
    ok, bad = checked(sandbox, "add"), checked(sandbox, "mismatch")
    assert ok.verdict == "PASS" and ok.target.kind == "pytest", (ok.reasons, out(proc))
    assert bad.verdict == "FAIL" and any(MISMATCH in r for r in bad.reasons), bad.reasons
    assert proc.returncode == 1 and "tests/test_mismatch.py" in out(proc)


def test_without_the_glob_a_plain_test_file_is_no_gpu_target(sandbox, kernelkit):
    proc = run_in(sandbox, kernelkit, "tests/test_add.py")  # collected and run here, on the host, as ever
    assert proc.returncode == 0 and "3 passed" in out(proc), out(proc)
    assert not (sandbox.tickets / "T-1" / "bench_add.json").exists()


def test_a_pytest_target_that_runs_no_test_is_inconclusive(sandbox, kernelkit):
    (kernelkit / "tests" / "test_empty.py").write_text("# no test yet\n")
    (kernelkit / "pytest.ini").write_text("[pytest]\ngpu_pytest_paths = tests/test_*.py\n")
    commit(kernelkit, "an empty test file")
    proc = run_in(sandbox, kernelkit, "tests/test_empty.py")
    art = checked(sandbox, "empty")
    assert art.exit_code == 5 and art.verdict == "INCONCLUSIVE", (art.reasons, out(proc))
    assert "collected no test" in art.reasons[0]
