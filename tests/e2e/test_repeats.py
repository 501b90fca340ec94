"""Repeats and A/B rounds without Docker: the repeated runs' log (rounds.py, runs_log.py), its summary
(summary.py), the base worktree (ab.py), the declaration keys, and compare's pairing of sides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.compare.core import compare
from pytest_gpuverify.config.declarations import DeclarationError, load_declarations
from pytest_gpuverify.engine.rounds import Side, run_rounds, schedule
from pytest_gpuverify.engine.runs_log import parse_log, runs_problems
from pytest_gpuverify.engine.summary import summarize, summary_problems
from pytest_gpuverify.execute.host import HostExecutor
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.place.ab import FOLDER, AbError, BaseWorktrees
from pytest_gpuverify.records.artifact import Artifact, PerfRow
from pytest_gpuverify.records.raw_log import split_log

CHECK = "[checkAllclose atol=0.01 rtol=0.01 {status}]"


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "harness.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def harness(tmp_path: Path, fail_on: int = 0, steps: int = 50, hostile: bool = False) -> list[str]:
    """Counts its runs in a file; prints a check, a step count and a table whose time grows per run."""
    return script(
        tmp_path,
        f"""
import pathlib, sys
c = pathlib.Path({str(tmp_path / "count")!r})
n = int(c.read_text()) + 1 if c.exists() else 1
c.write_text(str(n))
print({CHECK!r}.format(status="failed" if n == {fail_on} else "passed~"))
print("steps: {steps}")
if {hostile}:  # a command pretending to be the engine: another nonce, so it stays output
    print('[gpuverify 0123456789abcdef] run 9 of 9 begins: {{"checkout": "x"}}')
print("| m | us | TFLOPS |")
print("|--:|---:|---:|")
print(f"| 128 | {{100 + n}} | {{1000 / (100 + n):.3f}} |")
sys.exit(3 if n == 2 and {fail_on} < 0 else 0)
""",
    )


def run_sides(tmp_path: Path, argv: list[str], repeats: int = 3, labels=(None,)):
    log = tmp_path / "bench.log"
    sides = [Side(label, f"sha{label}", lambda n, a=argv: a, {}, str(tmp_path)) for label in labels]
    outcome, slices = run_rounds(HostExecutor(), sides, repeats, log, timeout_s=60)
    return log, outcome, slices


def test_schedule_interleaves_sides_per_round():
    a, b = Side("A", "a", lambda n: [], {}, "/"), Side("B", "b", lambda n: [], {}, "/")
    assert [(n, s.label) for n, s in schedule(3, [a, b])] == [
        (1, "A"),
        (1, "B"),
        (2, "A"),
        (2, "B"),
        (3, "A"),
        (3, "B"),
    ]


def test_every_run_is_read_and_a_failing_run_2_fails_the_whole(tmp_path):
    log, outcome, slices = run_sides(tmp_path, harness(tmp_path, fail_on=2))
    assert outcome.exit_code == 0 and [s.run for s in slices] == [1, 2, 3]
    parsed = parse_log("bench", log, ParseContext())
    assert parsed.correctness.passed is False
    assert parsed.failures and all(f.startswith("run 2 ") for f in parsed.failures), parsed.failures
    assert [(r.run, r.us_median) for r in parsed.perf] == [(1, 101.0), (2, 102.0), (3, 103.0)]
    lines = log.read_text().splitlines()
    for row in parsed.perf:  # source lines point into the one log
        assert f"| {row.us_median:g} |" in lines[row.source_line - 1]


def test_a_failing_exit_in_one_run_is_the_runs_exit_code(tmp_path):
    _, outcome, slices = run_sides(tmp_path, harness(tmp_path, fail_on=-1))
    assert [s.exit_code for s in slices] == [0, 3, 0] and outcome.exit_code == 3


def test_a_printed_marker_with_another_nonce_is_output(tmp_path):
    log, _, _ = run_sides(tmp_path, harness(tmp_path, hostile=True), repeats=2)
    segments = split_log(log)
    assert [s.run for s in segments] == [1, 2]
    assert all(any(b"run 9 of 9" in line for line in s.lines) for s in segments)


def test_min_steps_inconclusive_when_fewer_printed(tmp_path):
    log, _, _ = run_sides(tmp_path, harness(tmp_path, steps=20), repeats=2)
    parsed = parse_log("bench", log, ParseContext(min_steps=50))
    assert len(parsed.problems) == 2 and all("printed 20 steps" in p and "min_steps 50" in p for p in parsed.problems)
    assert parse_log("bench", log, ParseContext(min_steps=20)).problems == []
    single = tmp_path / "single.log"
    single.write_text(
        "[checkAllclose atol=0.01 rtol=0.01 passed~]\nbench: runs=10 iters\n| m | us |\n|--:|--:|\n| 1 | 5 |\n"
    )
    assert any("printed 10 steps" in p for p in parse_log("bench", single, ParseContext(min_steps=50)).problems)


def test_summary_and_check_of_runs(tmp_path):
    log, _, slices = run_sides(tmp_path, harness(tmp_path), labels=("A", "B"))
    parsed = parse_log("bench", log, ParseContext())
    assert [(r.side, r.run) for r in parsed.perf] == [("A", 1), ("B", 1), ("A", 2), ("B", 2), ("A", 3), ("B", 3)]
    summary = summarize(parsed.perf)
    us = {s.side: s for s in summary if s.metric == "us"}
    assert (us["A"].median, us["A"].min, us["A"].max, us["A"].runs) == (103.0, 101.0, 105.0, 3)
    art = Artifact(topic="t", ts="now", perf=parsed.perf, perf_summary=summary, runs=slices)
    assert runs_problems(art, log) == []
    tampered = art.model_copy(update={"perf_summary": [summary[0].model_copy(update={"median": 1.0})] + summary[1:]})
    assert summary_problems(tampered) and "median is 1.0" in summary_problems(tampered)[0]
    dropped = art.model_copy(update={"runs": slices[:-1]})
    assert "the raw log's lines state 6" in runs_problems(dropped, log)[0]


def test_a_title_printed_twice_per_run_is_two_tables_and_check_agrees(tmp_path):
    """A perf_report printed for causal off and on under one plot name, in each run of an A/B: each
    run's second table is its own (``#2``), in every run alike; ``gpuverify check``'s reading of the
    log gives the same rows, and an artifact that pools the two (an older reading) is told apart."""
    from pytest_gpuverify.verify.check import _compare_output

    argv = script(
        tmp_path,
        """
for causal, tflops in ((False, 80.0), (True, 100.0)):
    print("fused-attention:")
    print("     N_CTX     Triton")
    print(f"0   1024.0  {tflops:9.6f}")
""",
    )
    log, _, slices = run_sides(tmp_path, argv, labels=("A", "B"))
    parsed = parse_log("bench", log, ParseContext())
    assert [(r.side, r.run, r.table, r.metrics["Triton"]) for r in parsed.perf][:4] == [
        ("A", 1, "fused-attention", 80.0),
        ("A", 1, "fused-attention #2", 100.0),
        ("B", 1, "fused-attention", 80.0),
        ("B", 1, "fused-attention #2", 100.0),
    ]
    assert {(r.run, r.table) for r in parsed.perf} == {
        (n, t) for n in (1, 2, 3) for t in ("fused-attention", "fused-attention #2")
    }
    art = Artifact(topic="t", ts="now", perf=parsed.perf, perf_summary=summarize(parsed.perf), runs=slices)
    assert _compare_output(art, parse_log("bench", log, ParseContext())) == []
    pooled = art.model_copy(update={"perf": [r.model_copy(update={"table": "fused-attention"}) for r in art.perf]})
    problems = _compare_output(pooled, parse_log("bench", log, ParseContext()))
    assert len(problems) == 6 and "table is 'fused-attention', the raw output gives 'fused-attention #2'" in problems[0]


def test_two_artifacts_compare_their_head_sides(tmp_path):
    def ab(base_us, head_us):
        rows = [
            PerfRow(shape="m=1", name="us", us_median=v, side=side, run=i + 1)
            for side, values in (("A", base_us), ("B", head_us))
            for i, v in enumerate(values)
        ]
        return Artifact(topic="t", ts="now", perf=rows)

    before, after = ab([10.0] * 5, [10.0, 10.1, 9.9, 10.0, 10.05]), ab([10.0] * 5, [8.0, 8.1, 7.9, 8.0, 8.05])
    (pair,) = compare(before, after)
    assert (pair.base, pair.head, pair.call) == ([10.0, 10.1, 9.9, 10.0, 10.05], [8.0, 8.1, 7.9, 8.0, 8.05], "IMPROVED")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_base_worktree_made_excluded_and_removed(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("base\n")
    git(repo, "add", "-A"), git(repo, "commit", "-qm", "base")
    base_sha = git(repo, "rev-parse", "HEAD")
    (repo / "f.txt").write_text("head\n")
    git(repo, "commit", "-qam", "head")
    trees = BaseWorktrees("HEAD~1")
    wt = trees.for_checkout(repo)
    assert wt.sha == base_sha and (wt.path / "f.txt").read_text() == "base\n"
    assert wt.path.parent == repo / FOLDER and wt.container_path("/ws/r") == f"/ws/r/{FOLDER}/{wt.path.name}"
    assert git(repo, "status", "--porcelain") == ""  # the folder never makes the checkout dirty
    assert trees.for_checkout(repo) is wt  # one per checkout and session
    trees.remove_all()
    assert not (repo / FOLDER).exists() and trees.removed == [str(wt.path)] and trees.problems == []
    assert git(repo, "worktree", "list").count("\n") == 0
    with pytest.raises(AbError, match="--gpu-ab nope: not a commit.*Fix:"):
        BaseWorktrees("nope").for_checkout(repo)


def test_declaration_keys(tmp_path):
    toml = tmp_path / "gpuverify.toml"
    toml.write_text(
        '[[targets]]\nname = "lab"\nkind = "bench"\ncommand = "python3 b.py"\nrepeats = 3\nmin_steps = 50\n'
    )
    (target,) = load_declarations(toml).targets
    assert (target.repeats, target.min_steps) == (3, 50)
    toml.write_text('[[targets]]\nname = "lab"\nkind = "bench"\ncommand = "python3 b.py"\nrepeats = "3"\n')
    with pytest.raises(DeclarationError, match="key 'repeats'.*not a whole number >= 1.*Fix: write it without quotes"):
        load_declarations(toml)


def test_gpu_repeats_option_bounds():
    from pytest_gpuverify.config.options import SetupError, check_repeats

    assert check_repeats("3") == 3 and check_repeats(None) is None
    for bad in ("0", "x", "-2", "1001"):
        with pytest.raises(SetupError, match="--gpu-repeats .* Fix: e.g. --gpu-repeats 3"):
            check_repeats(bad)


@pytest.mark.parametrize(
    "line, counts",
    [
        ("steps: 50", [50]),
        ("runs=20 warmup=5", [20]),
        ("num_iters=20", [20]),
        ("--n-repeats 100", [100]),
        ("timed 50 iterations in 1.2 s", [50]),
        ("100 timed runs", [100]),
        ("warmup_iters=10 iters=200", [200]),
        ("10 warmup steps, then 40 steps", [40]),
        ("Warm-up iterations: 3", []),
        ("shape 4096 x 50 ms", []),
    ],
)
def test_step_counts_read_the_word_on_either_side_and_skip_warm_up(line, counts):
    from pytest_gpuverify.engine.runs_log import step_counts

    assert [n for n, _ in step_counts(line)] == counts
