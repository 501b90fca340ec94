"""The step fit as it was first written (every segment's cost recomputed: cubic in the series' length),
kept as the reference the fast fit (history/steps.py) must agree with, and for bench/history_scale.py's ratio."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_gpuverify.common import stats


def _l1_cost(values: Sequence[float]) -> float:
    mid = stats.median(values)
    return sum(abs(v - mid) for v in values)


def fit_boundaries_cubic(values: Sequence[float], penalty: float) -> list[int]:
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
