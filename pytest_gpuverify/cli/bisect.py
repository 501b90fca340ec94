"""``gpuverify bisect GOOD BAD --target T [--repeats N] [-- PYTEST_OPTIONS]``: one step of ``git bisect
run``. At the commit git checked out (HEAD), the target runs as an A/B against GOOD (ab_runner.py: one
lock, one GPU, A B A B ...), and compare's own rule calls its rows. The exit status is what ``git bisect
run`` reads:

- 0 (good): no row REGRESSED;
- 1 (bad): a row REGRESSED;
- 125 (skip): the A/B could not run or was not PASS, or a row that looks regressed (worse by more than
  the factor) is INCONCLUSIVE: this commit cannot be told;
- 128 (stop the bisect): the setup is wrong (GOOD or BAD not a commit, GOOD not an ancestor of BAD,
  HEAD not between them, a bad option): every step would fail alike.

Nothing else: an unexpected error is a skip with one line, never a code git would read as bad or as stop."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_gpuverify.cli.ab_runner import (
    DEFAULT_REPEATS,
    AbOutcome,
    commit_sha,
    head_of,
    is_ancestor,
    made_up_ticket,
    run_ab,
)
from pytest_gpuverify.compare.core import DEFAULT_RULE, INCONCLUSIVE, REGRESSED, Pair, Rule
from pytest_gpuverify.config.vocabulary import HIGHER

GOOD, BAD, SKIP, STOP = 0, 1, 125, 128
SHOWN_ROWS = 3  # rows named on a step's line; the rest counted


def looks_regressed(pair: Pair, rule: Rule) -> bool:
    """An INCONCLUSIVE row whose head is worse than its base by more than the factor: it may be the
    regression, so the commit cannot be called good."""
    if pair.call != INCONCLUSIVE or pair.ratio is None or pair.direction is None:
        return False
    worse = 1 / pair.ratio if pair.direction == HIGHER else pair.ratio
    return worse > rule.factor


def row_text(pair: Pair) -> str:
    change = f" {pair.ratio:.3f}x" if pair.ratio is not None else ""
    name = pair.name if pair.name != pair.metric else None  # a harness's `us` column: its name and metric alike
    return f"{' '.join(x for x in (pair.table, pair.shape, name, pair.metric) if x)}{change}"


def rows_text(pairs: list[Pair]) -> str:
    shown = "; ".join(row_text(p) for p in pairs[:SHOWN_ROWS])
    return shown + (f" (+{len(pairs) - SHOWN_ROWS} more)" if len(pairs) > SHOWN_ROWS else "")


def verdict_of(outcome: AbOutcome, rule: Rule) -> tuple[int, str]:
    """The step's exit status and what it says after the commit."""
    if outcome.result is None:
        return SKIP, f"skip: {outcome.problem or 'no result'}"
    pairs = outcome.result.pairs
    regressed = [p for p in pairs if p.call == REGRESSED]
    if regressed:
        return BAD, f"bad: {len(regressed)} row(s) REGRESSED: {rows_text(regressed)}"
    unsure = [p for p in pairs if looks_regressed(p, rule)]
    if unsure:
        return SKIP, f"skip: {len(unsure)} row(s) worse but INCONCLUSIVE: {rows_text(unsure)} ({unsure[0].why})"
    if not pairs:
        return SKIP, "skip: the A/B printed no perf row with both sides"
    counts = {c: sum(p.call == c for p in pairs) for c in dict.fromkeys(p.call for p in pairs)}
    return GOOD, "good: no row REGRESSED (" + ", ".join(f"{n} {c}" for c, n in counts.items()) + ")"


def setup_problem(checkout: Path, good: str, bad: str) -> tuple[str | None, str | None, str | None]:
    """(problem, GOOD's sha, HEAD's sha): the one-line problem when the bisect cannot work from here."""
    top, head = head_of(checkout)
    if top is None or head is None:
        return f"{checkout} is not a git checkout. Fix: run it from the repo git bisect runs in", None, None
    shas = {}
    for label, ref in (("GOOD", good), ("BAD", bad)):
        sha = commit_sha(top, ref)
        if sha is None:
            return (
                f"{label} {ref}: not a commit in {top}. Fix: name a sha, tag or branch git rev-parse knows",
                None,
                None,
            )
        shas[label] = sha
    if not is_ancestor(top, shas["GOOD"], shas["BAD"]):
        return (
            (
                f"GOOD {good} is not an ancestor of BAD {bad}: a bisect looks for the commit between them. "
                "Fix: swap them, or name a GOOD that BAD descends from"
            ),
            None,
            None,
        )
    if not (is_ancestor(top, shas["GOOD"], head) and is_ancestor(top, head, shas["BAD"])):
        return (
            (
                f"HEAD {head[:12]} is not between GOOD {good} and BAD {bad}. Fix: run it under "
                f"`git bisect start {bad} {good} && git bisect run gpuverify bisect {good} {bad} --target T`"
            ),
            None,
            None,
        )
    return None, shas["GOOD"], head


def run_bisect(
    good: str,
    bad: str,
    target: str,
    repeats: int = DEFAULT_REPEATS,
    pytest_args: Sequence[str] = (),
    rule: Rule = DEFAULT_RULE,
    checkout: Path | None = None,
) -> int:
    """One bisect step; its exit status is one of GOOD, BAD, SKIP and STOP (see the module's text)."""
    try:
        return _step(good, bad, target, repeats, pytest_args, rule, checkout or Path.cwd())
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, git bisect must read skip, never bad or stop
        said = str(exc).splitlines()[0] if str(exc) else ""
        print(f"gpuverify bisect: skip (125): an internal error: {type(exc).__name__}: {said}", file=sys.stderr)
        return SKIP


def _step(
    good: str, bad: str, target: str, repeats: int, pytest_args: Sequence[str], rule: Rule, checkout: Path
) -> int:
    if not (math.isfinite(rule.factor) and rule.factor > 1):
        print(
            f"gpuverify bisect: --factor {rule.factor:g}: a factor must be a finite number above 1. Fix: e.g. "
            "--factor 1.05 (stops the bisect, exit 128)",
            file=sys.stderr,
        )
        return STOP
    if repeats < 4:
        print(
            f"gpuverify bisect: --repeats {repeats}: compare calls a row from 4 runs a side at least. "
            "Fix: --repeats 5 (stops the bisect, exit 128)",
            file=sys.stderr,
        )
        return STOP
    problem, good_sha, head = setup_problem(checkout, good, bad)
    if problem or good_sha is None or head is None:
        print(f"gpuverify bisect: {problem} (stops the bisect, exit 128)", file=sys.stderr)
        return STOP
    if head == good_sha:
        print(f"gpuverify bisect: {head[:12]} good (exit 0): HEAD is GOOD itself")
        return GOOD
    outcome = run_ab(checkout, target, good_sha, repeats, made_up_ticket("bisect", head), pytest_args, rule)
    code, said = verdict_of(outcome, rule)
    where = f"; artifact {outcome.artifact_path}" if outcome.artifact_path else ""
    print(
        f"gpuverify bisect: {head[:12]} {said} (exit {code}; A/B against GOOD {good_sha[:12]}, {repeats} runs a side{where})",
        flush=True,
    )
    if outcome.result is None and outcome.output_tail:
        print(
            "  the session's last lines:\n" + "\n".join(f"    {line}" for line in outcome.output_tail[-8:]),
            file=sys.stderr,
        )
    return code
