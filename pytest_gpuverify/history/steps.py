"""Steps in a row's history: where its per-commit medians moved to another level and stayed there.

The rule, in two stages:

1. **Where**: the series (one value per commit, in the order they ran) is fit by segments of constant
   level, minimising the sum of each value's absolute distance to its segment's median plus a penalty
   per segment (asv's step detection: an L1 piecewise-constant fit, solved exactly here by dynamic
   programming). The penalty is what a shift of the compare rule's factor costs over its fewest runs:
   ``(factor - 1) x median |value| x least_runs``: a segment must save at least that much.
   The dynamic program extends each segment start by one value at a time, keeping the segment's
   median and its distance sum in two heaps (O(n^2 log n)), and drops a start once no later segment
   from it can win (PELT's pruning, exact for this cost): 200 commits in a few milliseconds.
2. **Whether**: each boundary is kept only when ``gpuverify compare``'s own rule (compare/core.py:
   factor, Welch's t on logs, :func:`call` on one pair: no FDR; each commit one run) calls the segments on its two
   sides IMPROVED or REGRESSED (each side: its commits nearest the boundary, at most
   :data:`SIDE_POINTS`); a boundary it does not call is dropped and the fit's segments joined.
   So a step needs the rule's fewest runs (4 commits) on each side before it is reported.

A regression is named by its commit range: the last commit before the step and the first after it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import pytest_gpuverify.compare.core as rule_code
from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.core import DEFAULT_RULE, IMPROVED, REGRESSED, Pair, Rule, call
from pytest_gpuverify.history import fit_cache

# the code a row's steps follow from: a cached fit of other code is never read
FIT_SOURCES = (__file__, rule_code.__file__ or "", stats.__file__ or "")
MOST_POINTS = 200  # the newest commits a fit looks at
SIDE_POINTS = 20  # the commits nearest a boundary that the rule is given on each side: a step is judged by the level
# around it, not by one long ago (a slow drift over a long segment would widen its spread)


@dataclass(frozen=True)
class Step:
    index: int  # the first point after the step
    call: str  # IMPROVED or REGRESSED
    before: float  # the segments' medians
    after: float
    why: str
    # where the machine's identity changed at this step (a driver update, new firmware): what changed, said
    # instead of a commit range (series.py)
    cause: str | None = None


def fit_boundaries(values: Sequence[float], penalty: float) -> list[int]:
    """The segment starts (after 0) of the L1 piecewise-constant fit with ``penalty`` per segment: the
    exact minimum of sum |value - its segment's median| + penalty x segments; of equal fits, the one
    whose last segment starts earliest (then the same for what precedes it)."""
    n = len(values)
    best = [0.0] + [float("inf")] * n  # best[j]: the least cost of values[:j]
    start = [0] * (n + 1)  # start[j]: where the last segment of that fit starts
    # fits within rounding of each other are equal: the earliest start wins, whatever order the sums ran in
    tie = 1e-12 * (sum(abs(v) for v in values) + penalty * n + 1.0)
    for i in range(n):  # best[i] is final here: every segment ending at i started before it
        low: list[float] = []  # the segment's lower half (negated: a max-heap), holding the median when odd
        high: list[float] = []  # its upper half
        low_sum = high_sum = 0.0
        for j in range(i, n):
            v = values[j]
            if low and v > -low[0]:
                heapq.heappush(high, v)
                high_sum += v
            else:
                heapq.heappush(low, -v)
                low_sum += v
            if len(low) > len(high) + 1:
                moved = -heapq.heappop(low)
                low_sum -= moved
                heapq.heappush(high, moved)
                high_sum += moved
            elif len(high) > len(low):
                moved = heapq.heappop(high)
                high_sum -= moved
                heapq.heappush(low, -moved)
                low_sum += moved
            # sum |v - median| of values[i:j + 1]: the upper half's sum less the lower's (an odd count's
            # median, the lower half's top, counted on the lower side once too many)
            cost = high_sum - low_sum - (low[0] if len(low) > len(high) else 0.0)
            if best[i] + cost > best[j + 1] + tie:
                break  # a segment from i costs at least this much more at every later end: never best again
            total = best[i] + cost + penalty
            if total < best[j + 1] - tie:
                best[j + 1], start[j + 1] = total, i
    cuts, j = [], n
    while j > 0:
        j = start[j]
        if j:
            cuts.append(j)
    return sorted(cuts)


def find_steps(values: Sequence[float], direction: str | None, rule: Rule = DEFAULT_RULE) -> list[Step]:
    """The steps of a series of per-commit values (oldest first) that ``rule`` calls; a row's answer is
    remembered (fit_cache.py), so reading an unchanged history again costs no fit."""
    offset = max(0, len(values) - MOST_POINTS)
    values = list(values)[offset:]
    if direction is None or len(values) < 2 * rule.least_runs:
        return []
    found = fit_cache.remembered(
        fit_cache.digest_of(values, direction, rule, FIT_SOURCES), lambda: _steps(values, direction, rule)
    )
    return [Step(index + offset, called, before, after, why) for index, called, before, after, why in found]


def _steps(values: list[float], direction: str, rule: Rule) -> list[tuple[int, str, float, float, str]]:
    penalty = (rule.factor - 1) * stats.median([abs(v) for v in values]) * rule.least_runs
    cuts = fit_boundaries(values, penalty)
    called: dict[tuple[int, int, int], Pair] = {}  # a boundary's call, by its segments: dropping one keeps the rest

    def at(lo: int, cut: int, hi: int) -> Pair:
        if (lo, cut, hi) not in called:
            before, after = values[max(lo, cut - SIDE_POINTS) : cut], values[cut : min(hi, cut + SIDE_POINTS)]
            called[lo, cut, hi] = _called(before, after, direction, rule)
        return called[lo, cut, hi]

    while True:
        bounds = [0, *cuts, len(values)]
        calls = [at(bounds[k - 1], bounds[k], bounds[k + 1]) for k in range(1, len(bounds) - 1)]
        weakest = next((k for k, pair in enumerate(calls) if pair.call not in (IMPROVED, REGRESSED)), None)
        if weakest is None:
            return [
                (cut, pair.call, stats.median(pair.base), stats.median(pair.head), pair.why)
                for cut, pair in zip(cuts, calls)
            ]
        del cuts[weakest]


def called_at_change(
    before: Sequence[float], after: Sequence[float], direction: str | None, rule: Rule = DEFAULT_RULE, cause: str = ""
) -> Step | None:
    """The step at ``len(before)`` where the machine changed (``cause`` says how), as the rule calls the points
    nearest it on each side (at most :data:`SIDE_POINTS`); None when it calls none (or the row has no direction)."""
    if direction is None:
        return None
    near_before, near_after = list(before)[-SIDE_POINTS:], list(after)[:SIDE_POINTS]
    pair = _called(near_before, near_after, direction, rule)
    if pair.call not in (IMPROVED, REGRESSED):
        return None
    return Step(len(before), pair.call, stats.median(near_before), stats.median(near_after), pair.why, cause or None)


def _called(before: list[float], after: list[float], direction: str, rule: Rule) -> Pair:
    return call(Pair(None, "", "", None, "", direction, before, after), rule)
