"""common/stats.py against published values: Student's t table, its p values, the incomplete beta,
Welch's t and Benjamini-Hochberg's adjusted p values."""

from __future__ import annotations

import math

import pytest

from pytest_gpuverify.common import stats

# Student's t, two-sided 95% (the 0.975 quantile) and 99% (0.995), from the published t table
T_TABLE = [
    (1, 0.975, 12.706),
    (2, 0.975, 4.303),
    (4, 0.975, 2.776),
    (8, 0.975, 2.306),
    (10, 0.975, 2.228),
    (30, 0.975, 2.042),
    (120, 0.975, 1.980),
    (5, 0.995, 4.032),
    (3, 0.95, 2.353),
    (20, 0.9, 1.325),
]


@pytest.mark.parametrize("df, prob, value", T_TABLE)
def test_t_quantile_matches_the_table(df, prob, value):
    assert stats.t_quantile(prob, df) == pytest.approx(value, abs=5e-4)
    assert stats.t_quantile(1 - prob, df) == pytest.approx(-value, abs=5e-4)  # symmetric
    assert stats.t_cdf(stats.t_quantile(prob, df), df) == pytest.approx(prob, abs=1e-12)  # the inverse of the CDF


def test_t_p_values_that_can_be_checked_by_hand():
    assert stats.t_two_sided_p(1.0, 1) == pytest.approx(0.5)  # the Cauchy: P(|T| > 1) = 1/2
    assert stats.t_two_sided_p(2.0, 2) == pytest.approx(1 - 2 / math.sqrt(6))  # df 2: 1 - t / sqrt(2 + t^2)
    assert stats.t_two_sided_p(2.776445, 4) == pytest.approx(0.05, abs=1e-6)
    assert stats.t_two_sided_p(0.0, 7.5) == pytest.approx(1.0)
    assert stats.t_cdf(-2.306004, 8) == pytest.approx(0.025, abs=1e-7)
    assert stats.t_two_sided_p(1.959964, math.inf) == pytest.approx(0.05, abs=1e-7)  # the normal's limit


def test_incomplete_beta():
    assert stats.betainc(2, 3, 0.4) == pytest.approx(0.5248)  # I_x(2,3) = 6x^2/2 - 8x^3/3 ... summed: 0.5248
    assert stats.betainc(1, 1, 0.3) == pytest.approx(0.3)  # the uniform's CDF
    assert stats.betainc(0.5, 0.5, 0.5) == pytest.approx(0.5)  # the arcsine law, symmetric
    assert stats.betainc(0.5, 0.5, 0.25) == pytest.approx(2 / math.pi * math.asin(0.5))
    assert (stats.betainc(3, 4, 0.0), stats.betainc(3, 4, 1.0)) == (0.0, 1.0)
    with pytest.raises(ValueError):
        stats.betainc(0, 1, 0.5)


def test_welch_t():
    a, b = [1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 7.0, 9.0]  # variances 5/3 and 20/3
    test = stats.welch(a, b)
    se = math.sqrt(5 / 3 / 4 + 20 / 3 / 4)
    assert (test.diff, test.se) == (pytest.approx(3.5), pytest.approx(se))
    va, vb = 5 / 12, 20 / 12
    assert test.df == pytest.approx((va + vb) ** 2 / (va**2 / 3 + vb**2 / 3))  # Welch-Satterthwaite: 4.41
    low, high = test.interval(0.95)
    assert high - 3.5 == pytest.approx(stats.t_quantile(0.975, test.df) * se) and 3.5 - low == pytest.approx(high - 3.5)
    assert test.p == pytest.approx(stats.t_two_sided_p(3.5 / se, test.df))
    assert 0.05 < test.p < 0.1  # t = 2.42 on 4.4 df
    flat = stats.welch([2.0, 2.0], [2.0, 2.0])
    assert (flat.p, flat.interval(0.95)) == (1.0, (0.0, 0.0))
    assert stats.welch([2.0, 2.0], [3.0, 3.0]).p == 0.0
    with pytest.raises(ValueError):
        stats.welch([1.0], [1.0, 2.0])


def test_benjamini_hochberg():
    # by hand: sorted 0.01 0.03 0.04 0.2 (m = 4): 0.04, 0.06, 0.0533, 0.2 -> running minimum from the top
    assert stats.bh_adjust([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.2])
    assert stats.bh_adjust([0.5]) == [0.5]
    assert stats.bh_adjust([0.9, 0.95]) == pytest.approx([0.95, 0.95])
    assert stats.bh_adjust([]) == []
    assert max(stats.bh_adjust([0.8] * 3 + [1.0])) <= 1.0


def test_cv_and_variance():
    assert stats.variance([1.0, 2.0, 3.0, 4.0]) == pytest.approx(5 / 3)
    assert stats.cv([9.0, 11.0]) == pytest.approx(math.sqrt(2) / 10)
    assert stats.cv([5.0]) is None and stats.cv([-1.0, 1.0]) is None
