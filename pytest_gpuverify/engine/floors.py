"""Declared floors (a throughput's minimum) and ceilings (a time's maximum), held to the perf rows.

A key names a metric (``"output tok/s"``, ``"TFLOPS"``), a row's name, or a time field
(``us_median``, ``min_us``, ``max_us``; ``us`` is the row's printed time, whatever its statistic).
Every value printed under the key is held to the limit: the lowest against a floor, the highest
against a ceiling. A printed value past its limit is a failure with the number; a key never
printed is a doubt (INCONCLUSIVE), never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_gpuverify.parsers.perfstats import printed_us
from pytest_gpuverify.records.artifact import PerfRow

_TIME_FIELDS = ("us_median", "min_us", "max_us")


def values_of(rows: Iterable[PerfRow], key: str) -> list[float]:
    want = key.strip().lower()
    out: list[float] = []
    for row in rows:
        metrics = {k.lower(): v for k, v in row.metrics.items() if v is not None}
        if want in metrics:
            out.append(metrics[want])
        elif want in _TIME_FIELDS and getattr(row, want) is not None:
            out.append(getattr(row, want))
        elif want == "us" or row.name.lower() == want:
            value = printed_us(row)
            if value is not None:
                out.append(value)
    return out


def limit_findings(
    rows: list[PerfRow], floors: Mapping[str, float], ceilings: Mapping[str, float]
) -> tuple[list[str], list[str]]:
    """(failures, doubts) of the declared floors and ceilings."""
    failures: list[str] = []
    doubts: list[str] = []
    for limits, word in ((floors, "floor"), (ceilings, "ceiling")):
        for key, limit in limits.items():
            values = values_of(rows, key)
            if not values:
                doubts.append(f"{word} {key} {limit:g} declared, but the output printed no {key}")
                continue
            worst = min(values) if word == "floor" else max(values)
            if (word == "floor" and worst < limit) or (word == "ceiling" and worst > limit):
                side = "below the floor" if word == "floor" else "above the ceiling"
                failures.append(f"{key} {worst:g} is {side} {limit:g}")
    return failures, doubts
