"""Steps in a row's history: where its per-commit medians moved to another level and stayed there.

The rule, in two stages:

1. **Where**: the series (one value per commit, in the order they ran) is fit by segments of constant
   level, minimising the sum of each value's absolute distance to its segment's median plus a penalty
   per segment (asv's step detection: an L1 piecewise-constant fit, solved exactly here by dynamic
   programming). The penalty is what a shift of the compare rule's factor costs over its fewest runs:
   ``(factor - 1) x median |value| x least_runs``: a segment must save at least that much.
2. **Whether**: each boundary is kept only when ``gpuverify compare``'s own rule (compare/core.py:
   factor, Welch's t on logs, :func:`call` on one pair: no FDR; each commit one run) calls the segments on its two
   sides IMPROVED or REGRESSED; a boundary it does not call is dropped and the fit's segments joined.
   So a step needs the rule's fewest runs (4 commits) on each side before it is reported.

A regression is named by its commit range: the last commit before the step and the first after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.core import DEFAULT_RULE, IMPROVED, REGRESSED, Pair, Rule, call

MOST_POINTS = 200  # the newest commits a fit looks at (the fit is cubic in their number)


@dataclass(frozen=True)
class Step:
    index: int  # the first point after the step
    call: str  # IMPROVED or REGRESSED
    before: float  # the segments' medians
    after: float
    why: str


def _l1_cost(values: Sequence[float]) -> float:
    mid = stats.median(values)
    return sum(abs(v - mid) for v in values)


def fit_boundaries(values: Sequence[float], penalty: float) -> list[int]:
    """The segment starts (after 0) of the L1 piecewise-constant fit with ``penalty`` per segment."""
    n = len(values)
    cost = [[0.0] * (n + 1) for _ in range(n)]  # cost[i][j]: values[i:j] as one segment
    for i in range(n):
        for j in range(i + 1, n + 1):
            cost[i][j] = _l1_cost(values[i:j])
    best = [0.0] + [float("inf")] * n
    start = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            total = best[i] + cost[i][j] + penalty
            if total < best[j]:
                best[j], start[j] = total, i
    cuts, j = [], n
    while j > 0:
        j = start[j]
        if j:
            cuts.append(j)
    return sorted(cuts)


def find_steps(values: Sequence[float], direction: Optional[str], rule: Rule = DEFAULT_RULE) -> list[Step]:
    """The steps of a series of per-commit values (oldest first) that ``rule`` calls."""
    offset = max(0, len(values) - MOST_POINTS)
    values = list(values)[offset:]
    if direction is None or len(values) < 2 * rule.least_runs:
        return []
    penalty = (rule.factor - 1) * stats.median([abs(v) for v in values]) * rule.least_runs
    cuts = fit_boundaries(values, penalty)
    while True:
        bounds = [0, *cuts, len(values)]
        calls = [_called(values[bounds[k - 1]:bounds[k]], values[bounds[k]:bounds[k + 1]], direction, rule)
                 for k in range(1, len(bounds) - 1)]
        weakest = next((k for k, pair in enumerate(calls) if pair.call not in (IMPROVED, REGRESSED)), None)
        if weakest is None:
            return [Step(cut + offset, pair.call, stats.median(pair.base), stats.median(pair.head), pair.why)
                    for cut, pair in zip(cuts, calls)]
        del cuts[weakest]


def _called(before: list[float], after: list[float], direction: str, rule: Rule) -> Pair:
    return call(Pair(None, "", "", None, "", direction, before, after), rule)
