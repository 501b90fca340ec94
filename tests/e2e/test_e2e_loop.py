"""`git bisect run gpuverify bisect GOOD BAD --target T` and `gpuverify compare --confirm`, end to end: the
real plugin in a real container on the simulated ROCm host, a lab repo whose harness (the demo's
bench/bench_lab.py) gets its speed from the commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.test_e2e_ab import git, lab_config

pytestmark = pytest.mark.docker

REPEATS = "4"  # the fewest runs a side compare calls from: each bisect step is one A/B session


def gv_in(sandbox, *args, timeout: float = 600):
    """`gpuverify ARGS` in the sandbox's checkout, with the simulated host's tools first on PATH."""
    env = dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}")
    env.pop("GPUVERIFY_ENV", None)
    return subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", *args], cwd=sandbox.repo, env=env,
                          capture_output=True, text=True, timeout=timeout)


def session_options(sandbox) -> list[str]:
    # cold: no unmeasured warm-up run per side, so a step is 2 x REPEATS runs
    return ["--", "--gpu-env", str(sandbox.env_path), "--gpu-window", "0.3", "--gpu-ab-cache", "cold",
            "-p", "no:cacheprovider"]


def lab_history(sandbox, commits: int, slow_at: int) -> list[str]:
    """``commits`` commits of the lab harness; from the ``slow_at``-th on (1-based) it is 20% slower."""
    shas = []
    for n in range(1, commits + 1):
        (sandbox.repo / "notes.txt").write_text(f"change {n}\n")
        lab_config(sandbox.repo, speed=1 / 1.2 if n >= slow_at else 1.0, message=f"change {n}", repeats=int(REPEATS))
        shas.append(git(sandbox.repo, "rev-parse", "HEAD"))
    return shas


def test_git_bisect_run_names_the_planted_slow_commit(sandbox):
    shas = lab_history(sandbox, 16, slow_at=11)
    good, bad = shas[0], shas[-1]
    git(sandbox.repo, "bisect", "start", bad, good)
    env = dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}")
    proc = subprocess.run(["git", "bisect", "run", sys.executable, "-m", "pytest_gpuverify.cli.main", "bisect", good, bad,
                           "--target", "lab", "--repeats", REPEATS, *session_options(sandbox)],
                          cwd=sandbox.repo, env=env, capture_output=True, text=True, timeout=600)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert f"{shas[10]} is the first bad commit" in proc.stdout, said
    steps = [line for line in proc.stdout.splitlines() if line.startswith("gpuverify bisect: ")]
    assert 3 <= len(steps) <= 5, said  # 15 commits to tell apart: about log2(15) steps
    for line in steps:  # each step: its commit, the call, the rows, from a PASS A/B against GOOD
        sha = line.split()[2]
        expected = "bad: 6 row(s) REGRESSED" if shas.index(next(s for s in shas if s.startswith(sha))) >= 10 else "good: no row"
        assert expected in line and f"A/B against GOOD {good[:12]}" in line, line
    git(sandbox.repo, "bisect", "reset")
    assert git(sandbox.repo, "status", "--porcelain") == "" and git(sandbox.repo, "worktree", "list").count("\n") == 0


def test_bisect_setup_and_a_step_that_cannot_run(sandbox):
    shas = lab_history(sandbox, 3, slow_at=3)
    # GOOD not an ancestor of BAD: every step would fail alike, so the bisect stops (128), before any run
    res = gv_in(sandbox, "bisect", shas[2], shas[0], "--target", "lab", *session_options(sandbox))
    assert res.returncode == 128 and "is not an ancestor of BAD" in res.stderr and "Fix:" in res.stderr, res.stderr
    assert not list(sandbox.tickets.glob("bisect-*"))
    res = gv_in(sandbox, "bisect", shas[0], shas[2], "--traget", "lab")  # a typo must not read as bad (argparse: 2)
    assert res.returncode == 128, res.stderr
    # a target the commit does not declare: the session fails, the step is skipped (125), never bad
    git(sandbox.repo, "checkout", "-q", shas[1])
    res = gv_in(sandbox, "bisect", shas[0], shas[2], "--target", "nope", "--repeats", REPEATS, *session_options(sandbox))
    assert res.returncode == 125, res.stdout + res.stderr
    assert res.stdout.startswith(f"gpuverify bisect: {shas[1][:12]} skip: the A/B session (pytest exit 4)"), res.stdout
    # the planted commit itself: bad, with the rows named
    git(sandbox.repo, "checkout", "-q", shas[2])
    res = gv_in(sandbox, "bisect", shas[0], shas[2], "--target", "lab", "--repeats", REPEATS, *session_options(sandbox))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "bad: 6 row(s) REGRESSED: m=128, n=4096, k=4096 us 1.200x; m=128, n=4096, k=4096 us TFLOPS 0.833x" in res.stdout, res.stdout
    artifact = res.stdout.split("artifact ")[1].rstrip(")\n")
    data = json.loads(open(artifact).read())
    assert data["verdict"] == "PASS" and data["ab"]["base_sha"] == shas[0] and data["ab"]["head_sha"] == shas[2]
    assert data["ab"]["order"] == [f"{s}{n}" for n in range(1, int(REPEATS) + 1) for s in "AB"]
    git(sandbox.repo, "checkout", "-q", "main")
