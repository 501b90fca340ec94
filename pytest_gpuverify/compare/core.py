"""Pair the perf rows of base and head (one A/B artifact whose rows carry ``side``, or two artifacts)
and call each pair. The run is the unit: a run's value is the median of what it printed for the row.

The rule (:class:`Rule`), in order, for each row key (table, shape, name, stat, metric):

1. a figure whose direction is unknown is not compared (parsers/figures.py);
2. a side throttled, or SM clocks apart (clocks.py): INCONCLUSIVE;
3. fewer runs per side than the exact Mann-Whitney test needs to reach ``alpha`` at all: INCONCLUSIVE;
4. a side whose runs spread beyond ``noisy_cv`` or fall into two clusters: INCONCLUSIVE, noisy;
5. the ratio of the sides' means within ``factor``: SAME;
6. the change not beyond ``spread`` x the runs' own CV (pooled over both sides): INCONCLUSIVE;
7. the exact two-sided Mann-Whitney p not below ``alpha``: INCONCLUSIVE;
8. otherwise IMPROVED or REGRESSED.

Every INCONCLUSIVE row from 3 on says how many runs per side would decide: the larger of the exact
test's minimum and pyperf's ``ceil(4 * 1.96^2 * CV^2 / W^2)`` (W: the change, at least the factor).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from math import sqrt
from statistics import fmean
from typing import Mapping, Optional

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.identity import Difference
from pytest_gpuverify.records.artifact import AbRecord, Artifact, PerfRow
from pytest_gpuverify.config.vocabulary import HIGHER
from pytest_gpuverify.parsers.figures import direction_of, row_values

BASE_SIDES, HEAD_SIDES = ("a", "base"), ("b", "head")
IMPROVED, REGRESSED, SAME, INCONCLUSIVE, NOT_COMPARED = "IMPROVED", "REGRESSED", "SAME", "INCONCLUSIVE", "NOT COMPARED"


@dataclass(frozen=True)
class Rule:
    factor: float = 1.05  # the least ratio of the means a call needs
    alpha: float = 0.05  # two-sided, exact Mann-Whitney U over the runs
    spread: float = 2.0  # the change must pass this many CVs of the runs (pooled over both sides)
    noisy_cv: float = 0.10  # a side whose runs spread more is noisy (pyperf's "unstable")

    @property
    def least_runs(self) -> int:
        return stats.runs_to_decide(self.alpha / 2)


DEFAULT_RULE = Rule()


@dataclass
class Pair:
    table: Optional[str]
    shape: str
    name: str
    stat: Optional[str]
    metric: str
    direction: Optional[str]  # "higher"/"lower": which way is better; None: unknown
    base: list[float] = field(default_factory=list)  # one value per run
    head: list[float] = field(default_factory=list)
    base_mean: Optional[float] = None
    head_mean: Optional[float] = None
    base_cv: Optional[float] = None
    head_cv: Optional[float] = None
    ratio: Optional[float] = None  # head / base, of the means
    call: str = INCONCLUSIVE
    why: str = ""
    runs_needed: Optional[int] = None  # per side, for an INCONCLUSIVE row that more runs can decide

    def as_dict(self) -> dict:
        return asdict(self)


def side_of(value: Optional[str]) -> Optional[str]:
    low = (value or "").lower()
    return "base" if low in BASE_SIDES else "head" if low in HEAD_SIDES else None


def pairs_of(rows_by_side: dict[str, list[PerfRow]], directions: Mapping[str, str] = {}) -> list[Pair]:
    """One pair per row key; each side's values one per run (a run's rows of one key: their median;
    rows without a run number, as a harness's own rounds print them, one each)."""
    found: dict[tuple, Pair] = {}
    units: dict[tuple, dict[object, list[float]]] = defaultdict(lambda: defaultdict(list))
    for side, rows in rows_by_side.items():
        for index, row in enumerate(rows):
            for metric, value in row_values(row):
                key = (row.table, row.shape, row.name, row.stat, metric)
                if key not in found:
                    found[key] = Pair(row.table, row.shape, row.name, row.stat, metric,
                                      direction_of(metric, row.name, directions))
                units[(*key, side)][row.run if row.run is not None else ("row", index)].append(value)
    for key, pair in found.items():
        pair.base = [stats.median(v) for v in units[(*key, "base")].values()]
        pair.head = [stats.median(v) for v in units[(*key, "head")].values()]
    return list(found.values())


def own_rows(art: Artifact) -> list[PerfRow]:
    """An artifact's rows as one side of a two-artifact compare: an A/B artifact (rows with a side)
    gives its head side (B) only, never its base rows pooled in."""
    if any(side_of(r.side) for r in art.perf):
        return [r for r in art.perf if side_of(r.side) == "head"]
    return list(art.perf)


def rows_by_side(base: Artifact, head: Optional[Artifact]) -> dict[str, list[PerfRow]]:
    if head is not None:
        return {"base": own_rows(base), "head": own_rows(head)}
    out: dict[str, list[PerfRow]] = defaultdict(list)
    for row in base.perf:
        side = side_of(row.side)
        if side:
            out[side].append(row)
    return {"base": out["base"], "head": out["head"]}


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _inconclusive(pair: Pair, why: str, needed: Optional[int] = None) -> Pair:
    pair.call, pair.runs_needed = INCONCLUSIVE, needed
    pair.why = why + (f"; {needed} runs per side would decide" if needed else "")
    return pair


def call(pair: Pair, rule: Rule = DEFAULT_RULE, clocks: Optional[str] = None) -> Pair:
    """The pair's call under ``rule``; ``clocks``: why the GPUs' clocks allow no call (clocks.py)."""
    if pair.direction is None:
        pair.call = NOT_COMPARED
        pair.why = (f"direction unknown: declare it, e.g. directions = {{ \"{pair.metric}\" = \"higher\" }}")
        return pair
    if not pair.base or not pair.head:
        return _inconclusive(pair, f"only one side printed it (base {len(pair.base)} runs, head {len(pair.head)})")
    b, h = fmean(pair.base), fmean(pair.head)
    pair.base_mean, pair.head_mean = b, h
    pair.base_cv, pair.head_cv = stats.cv(pair.base), stats.cv(pair.head)
    if b <= 0 or h <= 0:
        return _inconclusive(pair, "a mean is zero or negative")
    pair.ratio = h / b
    gain = pair.ratio if pair.direction == HIGHER else 1 / pair.ratio  # > 1: head is better
    change = max(gain, 1 / gain) - 1
    cvs = [c for c in (pair.base_cv, pair.head_cv) if c is not None]
    pooled = sqrt(sum(c * c for c in cvs) / len(cvs)) if len(cvs) == 2 else None
    least = rule.least_runs
    needed = max(least, stats.runs_for_effect(pooled, max(change, rule.factor - 1))) if pooled else least
    if clocks:
        return _inconclusive(pair, clocks)
    runs = min(len(pair.base), len(pair.head))
    if runs < least:
        return _inconclusive(pair, f"needs {needed} runs per side (base {len(pair.base)}, head {len(pair.head)}): "
                                   f"fewer cannot separate at p < {rule.alpha:g}")
    noisy = _noisy(pair, rule)
    if noisy:
        return _inconclusive(pair, "noisy: " + noisy, needed)
    if change <= rule.factor - 1:
        pair.call, pair.why = SAME, f"{_pct(change)} apart, within the factor {rule.factor:g}"
        return pair
    more = max(needed, runs + 1)
    if pooled is not None and change <= rule.spread * pooled:
        return _inconclusive(pair, f"{_pct(change)} apart: past the factor {rule.factor:g} but within the runs' own "
                                   f"spread ({rule.spread:g} x CV {_pct(pooled)})", more)
    p = stats.u_pvalue_two_sided(pair.base, pair.head)
    if p >= rule.alpha:
        return _inconclusive(pair, f"{_pct(change)} apart but the runs overlap (Mann-Whitney p = {p:.3f}, "
                                   f"needs < {rule.alpha:g})", more)
    pair.call = IMPROVED if gain > 1 else REGRESSED
    pair.why = (f"{_pct(change)} apart, past the factor {rule.factor:g} and {rule.spread:g} x CV {_pct(pooled or 0)}; "
                f"Mann-Whitney p = {p:.3f}")
    return pair


def _noisy(pair: Pair, rule: Rule) -> Optional[str]:
    for label, values, spread in (("base", pair.base, pair.base_cv), ("head", pair.head, pair.head_cv)):
        if spread is not None and spread > rule.noisy_cv:
            return f"the {label}'s runs spread CV {_pct(spread)} (bound {_pct(rule.noisy_cv)})"
        groups = stats.two_clusters(values)
        if groups:
            return (f"the {label}'s runs fall into two clusters ({len(groups[0])} near {stats.median(groups[0]):.4g}, "
                    f"{len(groups[1])} near {stats.median(groups[1]):.4g})")
    return None


def compare(base: Artifact, head: Optional[Artifact] = None, rule: Rule = DEFAULT_RULE,
            clocks: Optional[str] = None) -> list[Pair]:
    directions = {**(base.target.directions if base.target else {}),
                  **(head.target.directions if head is not None and head.target else {})}
    return [call(p, rule, clocks) for p in pairs_of(rows_by_side(base, head), directions)]


@dataclass
class Comparison:
    pairs: list[Pair]
    rule: Rule
    allowed: list[Difference] = field(default_factory=list)  # differing facts the user allowed
    notes: list[str] = field(default_factory=list)
    ab: Optional[AbRecord] = None  # one A/B artifact's record: which checkout is which side
