"""Pair the perf rows of base and head (one A/B artifact whose rows carry ``side``, or two artifacts)
and call each pair: IMPROVED / REGRESSED only past the factor *and* separated, SAME within the
factor, INCONCLUSIVE otherwise. The statistics are in :mod:`.stats`."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional

from pytest_gpuverify.engine.artifact import Artifact, PerfRow
from pytest_gpuverify.parsers.perfstats import printed_us
from pytest_gpuverify.compare import stats

HIGHER_IS_BETTER = re.compile(r"tflops|gflops|gb/s|tb/s|tok/s|tokens?/s|req/s|requests?/s|throughput|bandwidth", re.I)
BASE_SIDES, HEAD_SIDES = ("a", "base"), ("b", "head")
ALPHA = 0.002


@dataclass
class Pair:
    shape: str
    name: str
    stat: Optional[str]
    metric: str
    higher_is_better: bool
    base: list[float] = field(default_factory=list)
    head: list[float] = field(default_factory=list)
    base_median: Optional[float] = None
    head_median: Optional[float] = None
    ratio: Optional[float] = None  # head / base
    call: str = "INCONCLUSIVE"
    why: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def side_of(value: Optional[str]) -> Optional[str]:
    low = (value or "").lower()
    return "base" if low in BASE_SIDES else "head" if low in HEAD_SIDES else None


def row_values(row: PerfRow) -> Iterable[tuple[str, float]]:
    """(metric, value) of each quantity a row printed: its own time as ``us``, then its metrics."""
    time = printed_us(row)
    if time is not None:
        yield "us", time
    for key, value in row.metrics.items():
        if value is not None and key != f"{row.stat}_us":
            yield key, value


def pairs_of(rows_by_side: dict[str, list[PerfRow]]) -> list[Pair]:
    found: dict[tuple, Pair] = {}
    for side, rows in rows_by_side.items():
        for row in rows:
            for metric, value in row_values(row):
                key = (row.shape, row.name, row.stat, metric)
                if key not in found:
                    higher = bool(HIGHER_IS_BETTER.search(metric))
                    found[key] = Pair(row.shape, row.name, row.stat, metric, higher)
                getattr(found[key], side).append(value)
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


def call(pair: Pair, factor: float = 1.10) -> Pair:
    if not pair.base or not pair.head:
        pair.why = f"only one side printed it (base {len(pair.base)} runs, head {len(pair.head)})"
        return pair
    b, h = stats.median(pair.base), stats.median(pair.head)
    pair.base_median, pair.head_median = b, h
    if b <= 0 or h <= 0:
        pair.why = "a median is zero or negative"
        return pair
    pair.ratio = h / b
    gain = pair.ratio if pair.higher_is_better else 1 / pair.ratio  # > 1: head is better
    if 1 / factor < gain < factor:
        pair.call, pair.why = "SAME", f"within the factor {factor:g}"
        return pair
    ci_b, ci_h = stats.median_ci(pair.base), stats.median_ci(pair.head)
    apart_ci = ci_b is not None and ci_h is not None and (ci_b[1] < ci_h[0] or ci_h[1] < ci_b[0])
    if stats.separated(pair.base, pair.head):
        pair.why = "every run of one side beyond every run of the other"
    elif apart_ci:
        pair.why = "the 99% confidence intervals of the medians do not overlap"
    else:
        need = stats.runs_to_decide(ALPHA)
        pair.why = (f"past the factor {factor:g} but the runs overlap; {need}+ runs per side would let a "
                    f"Mann-Whitney U test at p < {ALPHA:g} decide")
        return pair
    pair.call = "IMPROVED" if gain > 1 else "REGRESSED"
    return pair


def compare(base: Artifact, head: Optional[Artifact] = None, factor: float = 1.10) -> list[Pair]:
    return [call(p, factor) for p in pairs_of(rows_by_side(base, head))]
