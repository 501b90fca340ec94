"""The Slurm array recipe of docs/many-machines.md, run as written on a real two-node Slurm
(tests/support/slurm_cluster.py): its script (the repo's path made the sandbox's) and its two submit
lines, in a fresh folder with no `logs/`. Four targets over the array's eight tasks: the four tasks
whose shard has none exit 0 with one line, and `gpuverify merge` says all eight arrived."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import slurm_cluster
from conftest import make_sandbox
from session_cmd import PYTEST
from test_slurm import cluster_env

pytestmark = pytest.mark.docker

PAGE = Path(__file__).resolve().parents[2] / "docs" / "many-machines.md"
REPO_IN_DOCS = "/shared/repos/aiter"
KEEP = ("test_gemm_a8w8.py", "test_rmsnorm2d.py", "test_moe_2stage.py", "test_no_check.py")


def recipe() -> tuple[str, str]:
    """(the batch script, the submit lines): the page's Slurm array section's two ```bash blocks."""
    section = PAGE.read_text().split("## A Slurm array job", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) == 2, f"{PAGE}: the Slurm array section has {len(blocks)} bash blocks"
    return blocks[0], blocks[1]


def test_the_recipe_makes_logs_before_sbatch():
    script, submit = recipe()
    assert "#SBATCH --output=logs/" in script
    lines = [line.strip() for line in submit.splitlines() if line.strip()]
    assert lines[0] == "mkdir -p logs" and lines[-1].startswith("sbatch "), lines


@pytest.fixture(scope="module")
def cluster():
    why = slurm_cluster.missing()
    if why:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="gpuverify-slurm-", dir="/tmp"))  # the munge user must reach it
    cluster = slurm_cluster.SlurmCluster(root)
    try:
        cluster.start()
    except RuntimeError as exc:
        cluster.stop()
        pytest.fail(f"the test cluster did not start: {exc}")
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def box(tmp_path_factory, docker_client, cluster):
    with make_sandbox(tmp_path_factory.mktemp("slurmrecipe") / "host", docker_client) as sandbox:
        for path in (sandbox.repo / "op_tests").iterdir():
            if path.name not in KEEP:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        git = ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "four targets"], check=True)
        sandbox.env_path.write_text(cluster_env(sandbox))
        yield sandbox


def test_the_slurm_array_recipe_runs_as_written_and_merges_eight_of_eight(box, cluster, tmp_path):
    script, submit = recipe()
    assert REPO_IN_DOCS in script
    submit_dir = tmp_path / "submit"  # where the user submits from: no logs/ yet
    submit_dir.mkdir()
    name = submit.split("sbatch ", 1)[1].split()[0]
    (submit_dir / name).write_text(script.replace(REPO_IN_DOCS, str(box.repo)))
    bin_dir = tmp_path / "bin"  # `pip install pytest-gpuverify` on the nodes: this python's pytest
    bin_dir.mkdir()
    (bin_dir / "pytest").write_text(f'#!/bin/sh\nexec {" ".join(PYTEST)} "$@"\n')
    (bin_dir / "pytest").chmod(0o755)
    env = cluster.env(
        PATH=f"{bin_dir}:{box.sim_bin}:{os.environ['PATH']}",
        GPUVERIFY_ENV=str(box.env_path),
        GITHUB_RUN_ID="",
        BUILDKITE_BUILD_ID="",
    )
    done = subprocess.run(
        ["bash", "-e", "-c", submit.replace("sbatch ", "sbatch --parsable ", 1)],
        cwd=submit_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    array = done.stdout.strip().split(";")[0]
    assert array.isdigit(), done.stdout
    deadline = time.monotonic() + 420
    while cluster.run("squeue", "-h", "-j", array, "-o", "%i").stdout.split():
        assert time.monotonic() < deadline, cluster.run("squeue", "-h", "-j", array).stdout
        time.sleep(1)

    shown = cluster.run("scontrol", "show", "job", "-o", array).stdout
    codes = {
        int(m["task"]): m["code"]
        for m in re.finditer(r"ArrayTaskId=(?P<task>\d+) .*?ExitCode=(?P<code>\d+:\d+)", shown)
    }
    assert sorted(codes) == list(range(8)), shown
    logs = {task: (submit_dir / "logs" / f"{array}_{task}.out").read_text(errors="replace") for task in range(8)}
    empty = [task for task, log in logs.items() if f"shard {task}/8 has no targets: 4 targets over 8 shards" in log]
    assert len(empty) == 4, {t: log[-1500:] for t, log in logs.items()}
    for task in range(8):  # a FAIL verdict exits 1; nothing else may stop a task (4: usage, 5: nothing ran)
        assert codes[task] in (("0:0",) if task in empty else ("0:0", "1:0")), (task, codes[task], logs[task][-3000:])
        assert "gpu-durations.json: no such file yet" in logs[task], logs[task][-3000:]

    tickets = box.tickets / "KEY"
    arts = sorted(p.name for p in tickets.glob("bench_*.json"))
    assert len(arts) == 4, arts
    merged = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_gpuverify.cli.main",
            "merge",
            str(tickets),
            "-o",
            str(tmp_path / "merged" / "KEY"),
        ],
        capture_output=True,
        text=True,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert f"shards of run {array}: 8 of 8 arrived, each once and whole" in merged.stdout, merged.stdout
