"""Declared builds under ``--gpu-ab``: the declared builds run once per session and side, each on its
own worktree, before the target's runs (real container, simulated ROCm host). The build writes a file
whose content the commit sets and the harness prints it, so each side's runs show whose build they saw."""

from __future__ import annotations

import re

import pytest
from kernel_repos import commit, git, out

from pytest_gpuverify.cli.handoff import build_handoff
from pytest_gpuverify.records.artifact import sha256_file
from pytest_gpuverify.verify.check import check_artifact

pytestmark = pytest.mark.docker

DECLARATION = """
[[builds]]
name = "gen"
command = ["sh", "build.sh"]

[[targets]]
name = "built"
kind = "bench"
path = "bench/bench_built.py"
topic = "built"
repeats = 2
"""

HARNESS = """import pathlib
built = pathlib.Path(__file__).resolve().parent.parent / "built.txt"
print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("saw build: " + built.read_text().strip())
"""


def two_commits(repo, base_build: str, head_build: str) -> tuple[str, str]:
    (repo / "bench" / "bench_built.py").write_text(HARNESS)
    (repo / "gpuverify.toml").write_text(DECLARATION)
    with open(repo / ".gitignore", "a") as fh:
        fh.write("\n/built.txt\n")
    (repo / "build.sh").write_text(base_build)
    commit(repo, "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "build.sh").write_text(head_build)
    commit(repo, "head")
    return base, git(repo, "rev-parse", "HEAD")


def side_outputs(log: str) -> list[tuple[str, str]]:
    """(side, what the run printed) per run, from the engine's begin/end lines."""
    return [
        (m.group(1), m.group(2))
        for m in re.finditer(
            r"^\[gpuverify [0-9a-f]{16}\] run \d of \d side ([AB]) begins[^\n]*\n(.*?)^\[gpuverify [0-9a-f]{16}\] run \d",
            log,
            re.M | re.S,
        )
    ]


def test_each_side_builds_its_own_worktree_once_and_its_runs_see_that_build(sandbox):
    base_sha, head_sha = two_commits(
        sandbox.repo,
        "echo base-$(git rev-parse --short HEAD 2>/dev/null || echo x) > built.txt\necho built base\n",
        "echo head > built.txt\necho built head\n",
    )
    proc = sandbox.pytest("--gpu-target", "built", "--gpu-ab", "HEAD~1")
    art = sandbox.artifact("built")
    folder = sandbox.tickets / "T-1"
    assert art.verdict == "PASS", out(proc) + str(art.reasons)
    assert (art.ab.base_sha, art.ab.head_sha) == (base_sha, head_sha)
    # one build per side, each its own kept output, in the artifact with its side
    [log_a] = folder.glob("build_gen.*.A.log")
    [log_b] = folder.glob("build_gen.*.B.log")
    assert log_a.read_text() == "built base\n" and log_b.read_text() == "built head\n"
    head, base = art.builds
    assert (head.side, head.exit_code, head.output, head.output_sha256) == ("B", 0, log_b.name, sha256_file(log_b))
    assert (base.side, base.exit_code, base.output, base.output_sha256) == ("A", 0, log_a.name, sha256_file(log_a))
    assert base.workdir.startswith(head.workdir + "/.gpuverify-ab/base-") and head.workdir == "/workspace/aiter"
    # every run saw its own side's build: A the base's file, B the head's
    runs = side_outputs((folder / art.raw_output).read_text())
    # each side's warm-up (--gpu-ab-cache warm, the default) first: it too sees its own side's build
    assert [s for s, _ in runs] == ["A", "B", "A", "B", "A", "B"], runs
    for side, printed in runs:
        assert ("saw build: base-" in printed) == (side == "A") and ("saw build: head" in printed) == (side == "B"), (
            runs
        )
    assert check_artifact(art, folder / "bench_built.json") == []
    # the handoff lists the build once per side, each with its own output
    doc = build_handoff(folder)
    builds = [c for c in doc.verification.commandsRun if c.command == "sh build.sh"]
    assert [c.observation.split(" build")[0] for c in builds] == ["side B (head)", "side A (base)"], builds
    assert log_b.name in builds[0].observation and log_a.name in builds[1].observation
    assert not (sandbox.repo / ".gpuverify-ab").exists() and sandbox.lock_files_free()


def test_a_failed_base_build_makes_the_target_inconclusive_and_nothing_runs(sandbox):
    two_commits(sandbox.repo, "echo broken at base; exit 4\n", "echo head > built.txt\n")
    proc = sandbox.pytest("--gpu-target", "built", "--gpu-ab", "HEAD~1")
    art = sandbox.artifact("built")
    folder = sandbox.tickets / "T-1"
    assert art.verdict == "INCONCLUSIVE", out(proc)
    assert art.reasons[0] == "build failed on the base side: sh build.sh exited 4", art.reasons
    assert not art.run.ran and art.raw_output is None and art.runs == []
    head, base = art.builds
    assert (head.side, head.exit_code, base.side, base.exit_code) == ("B", 0, "A", 4)
    assert (folder / base.output).read_text() == "broken at base\n"
    assert not list(folder.glob("bench_*.log")), "no run of either side"
    assert not any("bench_built.py" in c for c in sandbox.exec_ids())
    assert check_artifact(art, folder / "bench_built.json") == []
    # the artifact cannot hide the failure: a record edited to pass no longer matches the run
    art.builds[1].exit_code = 0
    assert any(
        "a build failed" in p or "every build record passed" in p
        for p in check_artifact(art, folder / "bench_built.json")
    )
    assert not (sandbox.repo / ".gpuverify-ab").exists() and sandbox.lock_files_free()
