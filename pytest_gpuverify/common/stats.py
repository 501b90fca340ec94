"""The statistics of ``gpuverify compare``, small and exact (no scipy).

* :func:`median` of a side's runs; :func:`cv`, their run-to-run spread; :func:`two_clusters`, runs
  that fall into two groups;
* :func:`betainc`, the regularized incomplete beta function, and from it Student's t distribution:
  :func:`t_cdf`, :func:`t_two_sided_p`, :func:`t_quantile`;
* :func:`welch`: Welch's unequal-variance t statistic of two samples (difference, its standard error,
  the Welch-Satterthwaite degrees of freedom);
* :func:`bh_adjust`: Benjamini-Hochberg adjusted p values (q values) of a family of tests.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from math import exp, inf, lgamma, log, log1p, pi, sqrt

_TINY = 1e-300
_EPS = 1e-15


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def variance(values: Sequence[float]) -> float:
    """The sample variance in floats (``statistics.variance`` sums exact fractions: 20x slower, and a
    compare of hundreds of rows takes thousands)."""
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def cv(values: Sequence[float]) -> float | None:
    """The coefficient of variation (sample standard deviation over the mean); None below 2 values
    or for a mean that is not positive."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return sqrt(variance(values)) / mean if mean > 0 else None


def two_clusters(
    values: Sequence[float], gap_over_range: float = 4.0, least_gap: float = 0.05
) -> tuple[list[float], list[float]] | None:
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


# -- Student's t ------------------------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes' betacf)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a, b > 0, not {a}, {b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side; else use the symmetry
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (df may be fractional, as Welch's is)."""
    if df == inf:
        return 2 * statistics.NormalDist().cdf(-abs(t))
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = t_two_sided_p(t, df) / 2.0
    return 1.0 - tail if t > 0 else tail


def _t_pdf(t: float, df: float) -> float:
    return exp(lgamma((df + 1) / 2) - lgamma(df / 2) - (df + 1) / 2 * log1p(t * t / df)) / sqrt(df * pi)


def t_quantile(prob: float, df: float) -> float:
    """The t with P(T <= t) = ``prob``: Newton's method from the normal quantile, kept inside a bracket
    (bisection where a step would leave it), to 1e-12."""
    if not 0.0 < prob < 1.0:
        raise ValueError(f"a quantile needs 0 < prob < 1, not {prob}")
    if prob < 0.5:
        return -t_quantile(1.0 - prob, df)
    z = statistics.NormalDist().inv_cdf(prob)
    if df == inf or df > 1e7:
        return z
    # the Cornish-Fisher expansion of t in z starts Newton close (two or three steps) for df above 2 or so
    guess = z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)
    lo, hi = 0.0, max(1.0, 2 * guess)
    while t_cdf(hi, df) < prob:  # the tails of few degrees of freedom are far out (df 1: the Cauchy)
        lo, hi = hi, hi * 4
    t = min(max(guess, lo), hi)
    for _ in range(200):
        f = t_cdf(t, df) - prob
        if f > 0:
            hi = t
        else:
            lo = t
        step = f / _t_pdf(t, df)
        if abs(step) <= 1e-12 * max(1.0, abs(t)):
            return t - step
        nxt = t - step
        t = nxt if lo < nxt < hi else (lo + hi) / 2
    return t


# -- Welch's t and the false discovery rate ---------------------------------------------------------


@dataclass(frozen=True)
class Welch:
    diff: float  # mean(b) - mean(a)
    se: float  # its standard error, sqrt(var_a/n_a + var_b/n_b)
    df: float  # Welch-Satterthwaite degrees of freedom

    @property
    def p(self) -> float:
        """Two-sided p of no difference; a difference of samples without spread: 0 (or 1 with none)."""
        if self.se == 0:
            return 1.0 if self.diff == 0 else 0.0
        return t_two_sided_p(self.diff / self.se, self.df)

    def interval(self, confidence: float) -> tuple[float, float]:
        """The ``confidence`` interval of the difference: diff -+ t(df) x se."""
        if self.se == 0:
            return self.diff, self.diff
        half = t_quantile(0.5 + confidence / 2, self.df) * self.se
        return self.diff - half, self.diff + half


def welch(a: Sequence[float], b: Sequence[float]) -> Welch:
    """Welch's t of ``b`` against ``a`` (2 values a side or more)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t needs 2 values a side")
    va, vb = variance(a) / len(a), variance(b) / len(b)
    se = sqrt(va + vb)
    if se == 0:
        df = float(len(a) + len(b) - 2)
    else:
        df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    return Welch(statistics.fmean(b) - statistics.fmean(a), se, df)


def bh_adjust(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p values, in the order given: q_(i) = min over j >= i of p_(j) m / j
    (at most 1). Calling the tests with q < Q keeps the expected share of false calls among the calls
    at most Q (independent or positively dependent tests)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [1.0] * m
    smallest = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        smallest = min(smallest, ps[i] * m / rank)
        out[i] = smallest
    return out
