"""`gpuverify bisect`'s exit statuses and setup checks on a real git repo, and how `compare --confirm`
marks the rows from an A/B's calls. The A/B sessions themselves run in tests/e2e/test_e2e_loop.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.cli.ab_runner import AbOutcome, artifacts_in_report
from pytest_gpuverify.cli.bisect import BAD, GOOD, SKIP, STOP, run_bisect, verdict_of
from pytest_gpuverify.cli.confirm import Compared, ConfirmError, apply, precheck
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare.command import exit_code
from pytest_gpuverify.compare.core import DEFAULT_RULE, Comparison, Pair


def pair(shape: str, call: str, ratio: float, metric: str = "us", direction: str = "lower") -> Pair:
    return Pair(
        None,
        shape,
        metric,
        None,
        metric,
        direction,
        base=[1.0] * 5,
        head=[ratio] * 5,
        ratio=ratio,
        call=call,
        why=f"{call} why",
    )


def outcome(*pairs: Pair, problem: str = "") -> AbOutcome:
    if problem:
        return AbOutcome([], problem=problem)
    return AbOutcome([], artifact_path=Path("/t/bench_lab.json"), result=Comparison(list(pairs), DEFAULT_RULE))


@pytest.mark.parametrize(
    "pairs, code, said",
    [
        ((pair("m=1", "SAME", 1.01), pair("m=2", "REGRESSED", 1.2)), BAD, "bad: 1 row(s) REGRESSED: m=2 us 1.200x"),
        # worse by more than the factor but not called: this commit cannot be told
        (
            (pair("m=1", "SAME", 1.0), pair("m=2", "INCONCLUSIVE", 1.12)),
            SKIP,
            "skip: 1 row(s) worse but INCONCLUSIVE: m=2 us",
        ),
        # a throughput 12% lower is worse too
        ((pair("m=1", "INCONCLUSIVE", 0.88, "TFLOPS", "higher"),), SKIP, "skip: 1 row(s) worse but INCONCLUSIVE"),
        # undecided rows that look better, or within the factor, leave the commit good
        (
            (pair("m=1", "INCONCLUSIVE", 0.8), pair("m=2", "INCONCLUSIVE", 1.02), pair("m=3", "SAME", 1.0)),
            GOOD,
            "good: no row REGRESSED (2 INCONCLUSIVE, 1 SAME)",
        ),
        ((pair("m=1", "IMPROVED", 0.8),), GOOD, "good: no row REGRESSED (1 IMPROVED)"),
        ((), SKIP, "skip: the A/B printed no perf row"),
    ],
)
def test_a_steps_exit_status(pairs, code, said):
    got, text = verdict_of(outcome(*pairs), DEFAULT_RULE)
    assert got == code and text.startswith(said), text


def test_an_ab_without_a_result_is_a_skip():
    assert verdict_of(outcome(problem="the A/B session's artifact: the head is FAIL"), DEFAULT_RULE) == (
        SKIP,
        "skip: the A/B session's artifact: the head is FAIL",
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, list[str]]:
    """Four commits in a line; HEAD at the last."""
    git(tmp_path, "init", "-q", "-b", "main")
    shas = []
    for n in range(4):
        (tmp_path / "f.txt").write_text(f"{n}\n")
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-qm", f"c{n}")
        shas.append(git(tmp_path, "rev-parse", "HEAD"))
    return tmp_path, shas


def test_a_wrong_setup_stops_the_bisect_before_any_run(repo, capsys):
    path, shas = repo
    cases = [
        ((shas[3], shas[0]), "is not an ancestor of BAD"),  # swapped
        (("nope", shas[3]), "GOOD nope: not a commit in"),
        ((shas[0], "nope"), "BAD nope: not a commit in"),
    ]
    for (good, bad), said in cases:
        assert run_bisect(good, bad, "lab", checkout=path) == STOP
        err = capsys.readouterr().err
        assert said in err and "Fix:" in err and err.count("\n") == 1, err
    git(path, "checkout", "-q", shas[1])  # HEAD between GOOD and BAD: fine; outside: stop
    assert run_bisect(shas[2], shas[3], "lab", checkout=path) == STOP
    assert f"HEAD {shas[1][:12]} is not between GOOD" in capsys.readouterr().err
    assert run_bisect(shas[0], shas[3], "lab", repeats=3, checkout=path) == STOP
    assert "--repeats 3: compare calls a row from 4 runs" in capsys.readouterr().err
    assert run_bisect(str(path / "f.txt"), shas[3], "lab", checkout=path / "f.txt") == STOP  # not a checkout
    assert "is not a git checkout" in capsys.readouterr().err


def test_head_at_good_is_good_without_a_run(repo, capsys):
    path, shas = repo
    git(path, "checkout", "-q", shas[0])
    assert run_bisect(shas[0], shas[3], "lab", checkout=path) == GOOD
    assert capsys.readouterr().out == f"gpuverify bisect: {shas[0][:12]} good (exit 0): HEAD is GOOD itself\n"


def test_an_internal_error_is_a_skip_never_bad_or_stop(repo, capsys):
    path, shas = repo
    # pytest_args that cannot be spread: the error happens past the setup checks, where the session starts
    assert run_bisect(shas[0], shas[3], "lab", pytest_args=None, checkout=path) == SKIP  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.startswith("gpuverify bisect: skip (125): an internal error: TypeError") and err.count("\n") == 1, err


def test_usage_errors_stop_the_bisect_and_options_after_dashes(capsys):
    assert main(["bisect", "a", "b"]) == 128  # no --target: argparse's 2 would read as bad
    assert "--target" in capsys.readouterr().err
    assert main(["bisect", "a", "b", "--target", "t", "--factor", "1"]) == STOP
    assert "--factor 1: a factor must be a finite number above 1" in capsys.readouterr().err
    assert main(["compare", "x.json", "--", "--gpu-env", "e.md"]) == 2
    assert "options after -- are for --confirm's A/B session" in capsys.readouterr().err
    assert main(["compare", "--confirm", "--confirm-repeats", "2", "x.json"]) == 2
    assert "--confirm-repeats 2" in capsys.readouterr().err


def test_the_sessions_artifact_from_its_junit_report(tmp_path):
    report = tmp_path / "r.xml"
    report.write_text(
        '<?xml version="1.0"?><testsuites><testsuite><testcase name="lab"><properties>'
        '<property name="gpuverify_verdict" value="PASS"/>'
        '<property name="gpuverify_artifact" value="/t/T-1/bench_lab.json"/>'
        "</properties></testcase></testsuite></testsuites>"
    )
    assert artifacts_in_report(report) == [Path("/t/T-1/bench_lab.json")]
    report.write_text("<testsuites><testsuite")  # cut short: none, never a traceback
    assert artifacts_in_report(report) == [] and artifacts_in_report(tmp_path / "missing.xml") == []


def compared(*pairs: Pair) -> Compared:
    return Compared(Comparison(list(pairs), DEFAULT_RULE), "lab", "a" * 40, "b" * 40)


def test_confirm_marks_each_regressed_row_and_only_confirmed_ones_fail():
    result = compared(
        pair("m=1", "REGRESSED", 1.2),
        pair("m=2", "REGRESSED", 1.2),
        pair("m=3", "REGRESSED", 1.2),
        pair("m=4", "IMPROVED", 0.8),
    )
    ab = outcome(pair("m=1", "REGRESSED", 1.19), pair("m=2", "SAME", 1.01), pair("m=4", "SAME", 1.0))
    apply(result, ab, 5)
    rows = result.result.pairs
    assert [p.call for p in rows] == ["REGRESSED", "SAME", "INCONCLUSIVE", "IMPROVED"]
    assert rows[0].why == "confirmed by A/B (REGRESSED why); REGRESSED why"
    assert rows[1].why == "REGRESSED not confirmed by A/B (SAME: SAME why); REGRESSED why"
    assert rows[2].why.startswith("REGRESSED not confirmed by A/B (the A/B printed no such row)")
    assert rows[3].why == "IMPROVED why"  # only REGRESSED rows are re-measured
    assert result.marks == {0: True, 1: False, 2: False}
    assert result.result.notes[-1].startswith(
        "confirm: 3 REGRESSED row(s) re-measured by an A/B of aaaaaaaaaaaa (A) and "
        "bbbbbbbbbbbb (B) on one GPU, 5 runs a side: 1 confirmed, 2 not"
    )
    assert exit_code(rows) == 1
    apply(unconfirmed := compared(pair("m=1", "REGRESSED", 1.2)), outcome(pair("m=1", "SAME", 1.0)), 5)
    assert exit_code(unconfirmed.result.pairs) == 0


def test_confirm_without_an_ab_result_confirms_nothing():
    result = compared(pair("m=1", "REGRESSED", 1.2))
    apply(result, outcome(problem="the A/B session (pytest exit 4) reported 0 artifact(s)"), 5)
    assert result.result.pairs[0].call == "REGRESSED" and result.marks == {0: None}
    assert result.result.pairs[0].why.startswith("REGRESSED not re-measured (the A/B could not run)")
    assert (
        result.result.notes[-1]
        == "confirm: 1 REGRESSED row(s) not re-measured: the A/B session (pytest exit 4) reported 0 artifact(s)"
    )


def test_confirm_needs_the_checkout_at_the_heads_commit(repo):
    path, shas = repo
    at = Compared(Comparison([], DEFAULT_RULE), "lab", shas[0], shas[3])
    assert precheck(at, path) == path
    away = Compared(Comparison([], DEFAULT_RULE), "lab", shas[0], shas[2])
    with pytest.raises(
        ConfirmError, match=f"is at {shas[3][:12]}, the head ran {shas[2][:12]}. Fix: `git checkout {shas[2]}`"
    ):
        precheck(away, path)
    with pytest.raises(ConfirmError, match="record no commit for the base"):
        precheck(Compared(Comparison([], DEFAULT_RULE), "lab", None, shas[3]), path)
