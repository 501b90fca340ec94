"""`git bisect run gpuverify bisect GOOD BAD --target T` and `gpuverify compare --confirm`, end to end: the
real plugin in a real container on the simulated ROCm host, a lab repo whose harness (the demo's
bench/bench_lab.py) gets its speed from the commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kernel_repos import git, lab_config

pytestmark = [pytest.mark.docker, pytest.mark.slow]  # each test runs several A/B sessions

REPEATS = "4"  # the fewest runs a side compare calls from: each bisect step is one A/B session


def gv_in(sandbox, *args, timeout: float = 600):
    """`gpuverify ARGS` in the sandbox's checkout, with the simulated host's tools first on PATH."""
    env = dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}")
    env.pop("GPUVERIFY_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *args],
        cwd=sandbox.repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def session_options(sandbox) -> list[str]:
    # cold: no unmeasured warm-up run per side, so a step is 2 x REPEATS runs
    return [
        "--",
        "--gpu-env",
        str(sandbox.env_path),
        "--gpu-window",
        "0.3",
        "--gpu-ab-cache",
        "cold",
        "-p",
        "no:cacheprovider",
    ]


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
    proc = subprocess.run(
        [
            "git",
            "bisect",
            "run",
            sys.executable,
            "-m",
            "pytest_gpuverify.cli.main",
            "bisect",
            good,
            bad,
            "--target",
            "lab",
            "--repeats",
            REPEATS,
            *session_options(sandbox),
        ],
        cwd=sandbox.repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert f"{shas[10]} is the first bad commit" in proc.stdout, said
    steps = [line for line in proc.stdout.splitlines() if line.startswith("gpuverify bisect: ")]
    assert 3 <= len(steps) <= 5, said  # 15 commits to tell apart: about log2(15) steps
    for line in steps:  # each step: its commit, the call, the rows, from a PASS A/B against GOOD
        sha = line.split()[2]
        expected = (
            "bad: 6 row(s) REGRESSED"
            if shas.index(next(s for s in shas if s.startswith(sha))) >= 10
            else "good: no row"
        )
        assert expected in line and f"A/B against GOOD {good[:12]}" in line, line
    print(proc.stdout)
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
    res = gv_in(
        sandbox, "bisect", shas[0], shas[2], "--target", "nope", "--repeats", REPEATS, *session_options(sandbox)
    )
    assert res.returncode == 125, res.stdout + res.stderr
    assert res.stdout.startswith(f"gpuverify bisect: {shas[1][:12]} skip: the A/B session (pytest exit 4)"), res.stdout
    # the planted commit itself: bad, with the rows named
    git(sandbox.repo, "checkout", "-q", shas[2])
    res = gv_in(sandbox, "bisect", shas[0], shas[2], "--target", "lab", "--repeats", REPEATS, *session_options(sandbox))
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        "bad: 6 row(s) REGRESSED: m=128, n=4096, k=4096 us 1.200x; m=128, n=4096, k=4096 us TFLOPS 0.833x" in res.stdout
    ), res.stdout
    artifact = res.stdout.split("artifact ")[1].rstrip(")\n")
    data = json.loads(open(artifact).read())
    assert data["verdict"] == "PASS" and data["ab"]["base_sha"] == shas[0] and data["ab"]["head_sha"] == shas[2]
    assert data["ab"]["order"] == [f"{s}{n}" for n in range(1, int(REPEATS) + 1) for s in "AB"]
    git(sandbox.repo, "checkout", "-q", "main")


DRIFTING_CONFIG = """import pathlib

# a slower machine while /tmp/gpuverify-lab-drift exists in the container (another tenant, a hot GPU)
SPEED = {speed!r} / (1.2 if pathlib.Path("/tmp/gpuverify-lab-drift").exists() else 1.0)
SPREAD = 0.01
STEPS = 50
FAIL_ON_RUN = 0
"""


def drifting_commit(sandbox, speed: float, message: str) -> str:
    lab_config(sandbox.repo, message=message, repeats=int(REPEATS))  # the declaration
    (sandbox.repo / "bench" / "lab_config.py").write_text(DRIFTING_CONFIG.format(speed=speed))
    (sandbox.repo / "notes.txt").write_text(message + "\n")
    git(sandbox.repo, "add", "-A")
    git(sandbox.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(sandbox.repo, "rev-parse", "HEAD")


def drift(sandbox, on: bool) -> None:
    container = sandbox.client.containers.get(sandbox.container)
    res = container.exec_run(["sh", "-c", "touch /tmp/gpuverify-lab-drift" if on else "rm -f /tmp/gpuverify-lab-drift"])
    assert res.exit_code == 0, res.output


def ci_artifacts(sandbox, base_sha: str, head_sha: str) -> tuple[str, str]:
    """Each commit run once, as CI runs them: the base's artifact and the head's (checkout left at the head)."""
    paths = []
    for sha, ticket in ((base_sha, "T-base"), (head_sha, "T-head")):
        git(sandbox.repo, "checkout", "-q", sha)
        proc = sandbox.pytest("--gpu-target", "lab", ticket=ticket)
        assert sandbox.artifact("lab", ticket).verdict == "PASS", proc.stdout.decode()[-2000:]
        paths.append(str(sandbox.tickets / ticket / "bench_lab.json"))
    return paths[0], paths[1]


def test_confirm_reports_a_regression_the_ab_confirms(sandbox):
    base_sha = drifting_commit(sandbox, 1.0, "base")
    head_sha = drifting_commit(sandbox, 1 / 1.2, "20% slower")
    base, head = ci_artifacts(sandbox, base_sha, head_sha)
    plain = gv_in(sandbox, "compare", base, head)
    assert plain.returncode == 1 and plain.stdout.count("REGRESSED") == 6, plain.stdout + plain.stderr

    git(sandbox.repo, "checkout", "-q", base_sha)  # the checkout is not at the head's commit: one line, the fix
    res = gv_in(sandbox, "compare", "--confirm", base, head, *session_options(sandbox))
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert res.stderr.strip() == (
        f"gpuverify compare --confirm: the checkout {sandbox.repo} is at {base_sha[:12]}, the head "
        f"ran {head_sha[:12]}. Fix: `git checkout {head_sha}` there (or run it in the head's checkout)"
    )
    res = gv_in(sandbox, "compare", base, head, "--", "--gpu-env", "x")  # options for a session that never runs
    assert res.returncode == 2 and "add --confirm" in res.stderr, res.stderr

    git(sandbox.repo, "checkout", "-q", head_sha)
    res = gv_in(
        sandbox, "compare", "--confirm", "--confirm-repeats", REPEATS, "--json", base, head, *session_options(sandbox)
    )
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert (doc["confirm"]["base_sha"], doc["confirm"]["head_sha"]) == (base_sha, head_sha)
    assert (doc["confirm"]["confirmed"], doc["confirm"]["not_confirmed"]) == (6, 0)
    assert all(
        p["call"] == "REGRESSED"
        and p["confirmed"] is True
        and p["why"].startswith("confirmed by A/B (")
        and p["why"].count("apart") == 2
        for p in doc["pairs"]
    ), [p["why"] for p in doc["pairs"]]
    ab = json.loads(open(doc["confirm"]["artifact"]).read())  # the A/B's own artifact: interleaved, one GPU
    assert ab["verdict"] == "PASS" and (ab["ab"]["base_sha"], ab["ab"]["head_sha"]) == (base_sha, head_sha)
    assert ab["ab"]["order"] == [f"{s}{n}" for n in range(1, int(REPEATS) + 1) for s in "AB"] and len(ab["gpus"]) == 1
    assert any(
        n.startswith("confirm: 6 REGRESSED row(s) re-measured by an A/B of") and "6 confirmed, 0 not" in n
        for n in doc["notes"]
    ), doc["notes"]


def test_confirm_drops_a_regression_the_ab_does_not_see(sandbox):
    """The head's CI run met a slow machine: compare calls every row REGRESSED; the A/B of the two
    commits on one GPU sees them alike, so nothing is reported regressed and the exit is 0."""
    base_sha = drifting_commit(sandbox, 1.0, "base")
    head_sha = drifting_commit(sandbox, 1.0, "a comment")
    git(sandbox.repo, "checkout", "-q", base_sha)
    sandbox.pytest("--gpu-target", "lab", ticket="T-base")
    drift(sandbox, True)
    git(sandbox.repo, "checkout", "-q", head_sha)
    sandbox.pytest("--gpu-target", "lab", ticket="T-head")
    drift(sandbox, False)
    base, head = (str(sandbox.tickets / t / "bench_lab.json") for t in ("T-base", "T-head"))
    assert gv_in(sandbox, "compare", base, head).returncode == 1
    res = gv_in(sandbox, "compare", "--confirm", "--confirm-repeats", REPEATS, base, head, *session_options(sandbox))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [line for line in res.stdout.splitlines() if "not confirmed by A/B" in line]
    assert len(rows) == 6 and "REGRESSED not confirmed by A/B (SAME: " in rows[0], res.stdout
    assert all("  SAME  " in line for line in rows), rows
    assert "6 REGRESSED row(s) re-measured" in res.stdout and "0 confirmed, 6 not" in res.stdout
    # against the store: the base commit is the stored runs'
    store = str(sandbox.root / "history.db")
    assert gv_in(sandbox, "history", "add", "--store", store, "--ref", "main", base).returncode == 0
    res = gv_in(
        sandbox,
        "compare",
        "--history",
        "--store",
        store,
        "--confirm",
        "--confirm-repeats",
        REPEATS,
        "--json",
        head,
        *session_options(sandbox),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert (doc["confirm"]["base_sha"], doc["confirm"]["not_confirmed"]) == (base_sha, 6), doc["confirm"]
    assert {p["call"] for p in doc["pairs"]} == {"SAME"} and all(p["confirmed"] is False for p in doc["pairs"])
