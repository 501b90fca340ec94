"""The GitHub Actions recipe of the docs, run as written: the two pages show the same workflow; its
shard command runs on the simulated ROCm host for every matrix entry (each job a fresh runner: the
ticket folder it uploads holds only its own shard), with a durations file that does not exist yet;
one shard is re-run as "Re-run failed jobs" does (the same GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT=2); the
merge and report steps run as written and find every shard: "4 of 4 arrived"."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sandboxes import make_sandbox

DOCS = Path(__file__).resolve().parents[2] / "docs"
RUN_ID = "8811"
KEEP = ("test_gemm_a8w8.py", "test_rmsnorm2d.py", "test_moe_2stage.py", "test_no_check.py")  # one a shard


def recipe(page: str) -> str:
    """The one ```yaml block of ``page`` that defines jobs."""
    blocks = re.findall(r"```yaml\n(.*?)```", (DOCS / page).read_text(), re.S)
    found = [b for b in blocks if b.startswith("jobs:")]
    assert len(found) == 1, f"{page}: {len(found)} GitHub workflows"
    return found[0]


def expand(text: str, shard: int) -> str:
    return text.replace("${{ github.run_id }}", RUN_ID).replace("${{ matrix.shard }}", str(shard))


def test_the_two_pages_show_the_same_workflow():
    assert recipe("ci.md") == recipe("many-machines.md")


@pytest.fixture(scope="module")
def box(tmp_path_factory, docker_client):
    with make_sandbox(tmp_path_factory.mktemp("recipe") / "host", docker_client) as sandbox:
        tests = sandbox.repo / "op_tests"
        for path in tests.iterdir():
            if path.name not in KEEP:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        git = ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "four targets"], check=True)
        yield sandbox


def _steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def _run_shard(box, workflow: dict, shard: int, attempt: int, ci: Path) -> Path:
    """One gpu-tests job on a fresh runner: its pytest step as written, then its upload (download-artifact
    later puts it in shards/<name>/). Returns the uploaded folder."""
    steps = _steps(workflow, "gpu-tests")
    command = next(s["run"] for s in steps if str(s.get("run", "")).lstrip().startswith("pytest"))
    argv = shlex.split(expand(command, shard))
    assert argv[0] == "pytest"
    proc = box.pytest(
        *argv[1:],
        ticket=None,
        env={
            "GITHUB_RUN_ID": RUN_ID,
            "GITHUB_RUN_ATTEMPT": str(attempt),
            "SLURM_ARRAY_JOB_ID": "",
            "BUILDKITE_BUILD_ID": "",
        },
    )
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode in (0, 1) and "Traceback" not in text, text[-3000:]  # 1: a target's FAIL verdict
    assert "--gpu-durations .github/gpu-durations.json: no such file yet" in text, text[-3000:]
    upload = next(s for s in steps if "upload-artifact" in str(s.get("uses", "")))
    where = expand(upload["with"]["path"], shard)
    assert where.startswith("~/tickets/"), where  # the env file's tickets folder, here the sandbox's
    folder = box.tickets / where[len("~/tickets/") :]
    dest = ci / f"attempt{attempt}" / expand(upload["with"]["name"], shard)
    shutil.move(str(folder), dest)  # the runner is gone after its job
    return dest


def _merge_steps(workflow: dict) -> list[list[str]]:
    return [
        shlex.split(expand(s["run"], 0))
        for s in _steps(workflow, "merge")
        if str(s.get("run", "")).startswith("gpuverify ")
    ]


def _gpuverify(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert argv[0] == "gpuverify"
    expanded = [str(p) for a in argv[1:] for p in (sorted(cwd.glob(a)) if "*" in a else [a])]  # the shell's glob
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *expanded], cwd=cwd, capture_output=True, text=True
    )


@pytest.mark.docker
def test_the_github_recipe_runs_and_a_rerun_attempt_merges_whole(box):
    workflow = yaml.safe_load(recipe("many-machines.md"))
    matrix = workflow["jobs"]["gpu-tests"]["strategy"]["matrix"]["shard"]
    ci = box.root / "ci"
    (ci / "attempt1").mkdir(parents=True)
    (ci / "attempt2").mkdir()
    uploaded = {shard: _run_shard(box, workflow, shard, 1, ci) for shard in matrix}
    again = _run_shard(box, workflow, 1, 2, ci)  # "Re-run failed jobs": shard 1 once more

    download = next(s for s in _steps(workflow, "merge") if "download-artifact" in str(s.get("uses", "")))
    # the upload's overwrite: the re-run's upload replaces its first attempt's under the same name
    assert next(s for s in _steps(workflow, "gpu-tests") if "upload-artifact" in str(s.get("uses", "")))["with"][
        "overwrite"
    ]
    merge_job = ci / "merge-job"
    shards = merge_job / download["with"]["path"]
    shards.mkdir(parents=True)
    for shard, folder in uploaded.items():
        shutil.copytree(again if shard == 1 else folder, shards / folder.name)
    for argv in _merge_steps(workflow):
        done = _gpuverify(argv, merge_job)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        if argv[1] == "merge":
            assert (
                f"shards of run {RUN_ID}: {len(matrix)} of {len(matrix)} arrived, each once and whole" in done.stdout
            ), done.stdout
    assert (merge_job / "report.html").is_file()

    # both attempts downloaded side by side (an upload without overwrite, a copy kept): the latest wins
    both = ci / "both-attempts"
    (both / "shards").mkdir(parents=True)
    for folder in uploaded.values():
        shutil.copytree(folder, both / "shards" / folder.name)
    shutil.copytree(again, both / "shards" / "gpu-shard-1-attempt2")
    merge = _merge_steps(workflow)[0]
    done = _gpuverify(merge, both)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUPERSEDED" in done.stdout and "ran again in attempt 2" in done.stdout, done.stdout
    assert (
        f"shards of run {RUN_ID}: {len(matrix)} of {len(matrix)} arrived, each once and whole (attempts 1, 2"
        in done.stdout
    ), done.stdout
