"""The step fit: the fast dynamic program gives the cubic one's cuts (tests/support/cubic_fit.py, the fit
as first written) on random series of every kind, and a row's steps are remembered in the cache file."""

from __future__ import annotations

import random
import sqlite3

import pytest
from cubic_fit import _l1_cost, fit_boundaries_cubic

from pytest_gpuverify.history import fit_cache
from pytest_gpuverify.history.steps import find_steps, fit_boundaries


def series(kind: int, n: int, rng: random.Random) -> list[float]:
    if kind == 0:  # noise only
        return [rng.gauss(10, 0.5) for _ in range(n)]
    if kind == 1:  # levels of random lengths, small noise
        values: list[float] = []
        level = 10.0
        while len(values) < n:
            level *= rng.choice([0.8, 1.0, 1.2])
            values += [level * (1 + rng.gauss(0, 0.01)) for _ in range(rng.randint(1, 10))]
        return values[:n]
    if kind == 2:  # a few whole numbers: ties everywhere
        return [float(rng.randint(0, 5)) for _ in range(n)]
    return [round(rng.gauss(10, 1), 1) for _ in range(n)]  # one decimal: ties and rounding


def fit_cost(values: list[float], cuts: list[int], penalty: float) -> float:
    bounds = [0, *cuts, len(values)]
    return sum(_l1_cost(values[bounds[k] : bounds[k + 1]]) + penalty for k in range(len(bounds) - 1))


def test_the_fast_fit_gives_the_cubic_fits_cuts():
    """Real-valued series: the same cuts. Series with exact ties (whole numbers, one decimal) may have
    several least-cost fits, of which each fit's rounding picks one: there both must cost the least."""
    rng = random.Random(37)
    same = 0
    for trial in range(600):
        kind = trial % 4
        values = series(kind, rng.randint(1, 70), rng)
        penalty = rng.choice([0.01, 0.1, 1.0, 2.0, 8.0])
        fast, cubic = fit_boundaries(values, penalty), fit_boundaries_cubic(values, penalty)
        if kind < 2:
            assert fast == cubic, (trial, penalty, values)
        same += fast == cubic
        assert fit_cost(values, fast, penalty) == pytest.approx(fit_cost(values, cubic, penalty), abs=1e-9)
    assert same > 560, same


def test_the_fast_fit_finds_planted_levels_on_long_series():
    rng = random.Random(5)
    values = [10 * (1 + rng.gauss(0, 0.002)) for _ in range(120)] + [12 * (1 + rng.gauss(0, 0.002)) for _ in range(80)]
    assert fit_boundaries(values, 0.05 * 10 * 4) == [120]
    assert fit_boundaries([], 1.0) == [] and fit_boundaries([3.0], 1.0) == []


def test_a_rows_steps_are_remembered(tmp_path, monkeypatch):
    cache = tmp_path / "fits.sqlite"
    monkeypatch.setenv(fit_cache.ENV, str(cache))
    flat = [10.0, 10.02, 9.98, 10.01, 9.99, 10.03, 9.97, 10.0, 10.02, 9.99]
    up = flat[:5] + [v * 1.2 for v in flat[5:10]]
    first = find_steps(up, "lower")
    assert [(s.index, s.call) for s in first] == [(5, "REGRESSED")]
    with sqlite3.connect(cache) as conn:
        (stored,) = conn.execute("SELECT steps FROM fits").fetchall()
        conn.execute("UPDATE fits SET steps = ?", ('[[5, "REGRESSED", 1.0, 2.0, "read from the cache"]]',))
    assert find_steps(up, "lower")[0].why == "read from the cache"  # the second read fits nothing
    assert find_steps(up, "higher")[0].call == "IMPROVED"  # another direction: another entry
    assert find_steps(flat + up, "lower")[0].index == 15  # the offset of a longer series applies to what is read
    monkeypatch.setenv(fit_cache.ENV, "off")
    assert find_steps(up, "lower") == first


def test_an_unusable_cache_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv(fit_cache.ENV, str(tmp_path / "not-a-folder" / "x" / "fits.sqlite"))
    (tmp_path / "not-a-folder").write_text("a file where the cache's folder would be")
    flat = [10.0, 10.02, 9.98, 10.01, 9.99]
    assert [(s.index, s.call) for s in find_steps(flat + [v * 1.2 for v in flat], "lower")] == [(5, "REGRESSED")]
