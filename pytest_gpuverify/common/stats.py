"""The statistics of ``gpuverify compare``, small and exact (no scipy).

* :func:`median` of a side's runs; :func:`cv`, their run-to-run spread; :func:`two_clusters`, runs
  that fall into two groups;
* :func:`runs_for_effect`: pyperf's runs per side to tell a relative effect from a spread;
* :func:`runs_to_decide`: the fewest runs per side with which a one-sided Mann-Whitney U test can
  reach ``p < alpha`` at all, from U's exact null distribution (the smallest p is ``P(U = 0)``).
"""

from __future__ import annotations

import statistics
from math import ceil, comb
from typing import Optional, Sequence


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def u_pvalue(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney p: P(U <= u) for the side with fewer wins (ties count half)."""
    u = sum(1.0 if x < y else 0.5 if x == y else 0.0 for x in a for y in b)
    u = min(u, len(a) * len(b) - u)
    counts = _u_counts(len(a), len(b))
    return sum(c for value, c in enumerate(counts) if value <= u) / comb(len(a) + len(b), len(a))


def _u_counts(m: int, n: int) -> list[int]:
    """How many arrangements of m and n give each U (0..m*n): the exact null distribution."""
    table: dict[tuple[int, int], list[int]] = {}

    def counts(i: int, j: int) -> list[int]:
        if i == 0 or j == 0:
            return [1]
        if (i, j) not in table:  # the largest value is from side a (adds j to U) or from side b
            left, right = counts(i - 1, j), counts(i, j - 1)
            out = [0] * (i * j + 1)
            for u, c in enumerate(left):
                out[u + j] += c
            for u, c in enumerate(right):
                out[u] += c
            table[(i, j)] = out
        return table[(i, j)]

    return counts(m, n)


def runs_to_decide(alpha: float = 0.002, most: int = 50) -> int:
    """The fewest runs per side at which complete separation gives a one-sided U test p < alpha."""
    for n in range(1, most + 1):
        if _u_counts(n, n)[0] / comb(2 * n, n) < alpha:
            return n
    return most


def cv(values: Sequence[float]) -> Optional[float]:
    """The coefficient of variation (sample standard deviation over the mean); None below 2 values
    or for a mean that is not positive."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def two_clusters(values: Sequence[float], gap_over_range: float = 4.0,
                 least_gap: float = 0.05) -> Optional[tuple[list[float], list[float]]]:
    """The two groups when the sorted runs split into two of at least two runs each, apart by more
    than ``gap_over_range`` times the wider group's own range and by ``least_gap`` of the median
    (5 runs or more); None otherwise. Steady noise does this in about 1% of 5-run sides."""
    ordered = sorted(values)
    if len(ordered) < 5:
        return None
    middle = median(ordered)
    for cut in range(2, len(ordered) - 1):
        low, high = ordered[:cut], ordered[cut:]
        gap = high[0] - low[-1]
        if gap > gap_over_range * max(low[-1] - low[0], high[-1] - high[0]) and gap > least_gap * abs(middle):
            return low, high
    return None


def runs_for_effect(spread: float, effect: float, z: float = 1.96) -> int:
    """pyperf's runs per side to tell a relative ``effect`` from a run-to-run ``spread`` (both as
    fractions): ``ceil(4 z^2 CV^2 / W^2)``."""
    return max(1, ceil(4 * z * z * spread * spread / (effect * effect))) if effect > 0 else 1


def u_pvalue_two_sided(a: Sequence[float], b: Sequence[float]) -> float:
    return min(1.0, 2 * u_pvalue(a, b))
