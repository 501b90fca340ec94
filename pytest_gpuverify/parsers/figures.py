"""What a printed figure is: which way is better (the one registry ``compare`` and ``report`` read) and
its unit. A figure is a perf row's own time (metric ``us``) or a key of its ``metrics``.

Direction, first match wins:

* a declaration's ``directions`` table (metric or row name -> ``"higher"``/``"lower"``);
* uplift, speedup, ``x faster``: higher; throughputs (TFLOPS, GB/s, tok/s, any rate per second,
  bandwidth ...): higher;
  correctness figures read as higher-is-better elsewhere (cosine_sim, snr_db): higher;
* times (``us``, ``*_us``, a ms/ns/s unit, ``latency``, ``time``): lower;
* error and mismatch figures (``err``, ``error``, ``mismatch``, ``diff``): lower.

Anything else is unknown (None): ``compare`` lists it as not compared, never calls it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pytest_gpuverify.config.vocabulary import HIGHER, LOWER
from pytest_gpuverify.parsers.perfstats import printed_us
from pytest_gpuverify.parsers.reading.measures import HIGHER_IS_BETTER as CORRECTNESS_HIGHER

if TYPE_CHECKING:
    from pytest_gpuverify.records.artifact import PerfRow


_TIME = re.compile(r"(?:^|[\s_(/\-])(?:us|usec|µs|ms|ns|s|sec|time|latency)(?=$|[\s_)/\-])", re.I)
_GAIN = re.compile(r"uplift|speed-?up|x\s*faster|faster\s*by", re.I)
_THROUGHPUT = re.compile(
    r"[tgmk]?flops|\w/s(?:ec)?\b|per\s+sec|throughput|bandwidth|\bbw\b", re.I
)  # a rate: GB/s, tok/s
_ERROR = re.compile(
    r"(?:^|[\s_(\-])(?:err|errors?|mismatch(?:es|ed)?|diff|abs[\s_]?error)(?=$|[\s_)\-:%])|"
    r"error|mismatch",
    re.I,
)
_UNIT = re.compile(r"\(([^()]+)\)\s*$|(?:^|[\s_])([tgmk]?flops|[^\s_]+/s(?:ec)?|%)\s*$", re.I)


def declared(metric: str, row_name: str, directions: Mapping[str, str]) -> str | None:
    """The direction a declaration names for this figure (by metric, else by row name), if any."""
    by_name = {k.strip().casefold(): v for k, v in directions.items()}
    for key in (metric, row_name):
        if key.strip().casefold() in by_name:
            return by_name[key.strip().casefold()]
    return None


def direction_of(metric: str, row_name: str = "", directions: Mapping[str, str] = {}) -> str | None:
    """``"higher"``/``"lower"`` (which way is better), or None when nothing says."""
    said = declared(metric, row_name, directions)
    if said is not None:
        return said
    if _GAIN.search(metric) or _THROUGHPUT.search(metric) or metric.casefold() in CORRECTNESS_HIGHER:
        return HIGHER  # before times: "GB/s" ends in a time unit
    if metric == "us" or _TIME.search(metric):
        return LOWER
    if _ERROR.search(metric):
        return LOWER
    return None


def unit_of(metric: str) -> str:
    """The unit a figure is printed in: ``us`` for times (rows hold microseconds), a bracketed or
    trailing unit of the name (``Triton (GB/s)`` -> ``GB/s``, ``TFLOPS``), else the name itself."""
    if metric == "us" or metric.endswith("_us"):
        return "us"
    found = _UNIT.search(metric)
    if found:
        return found.group(1) or found.group(2)
    return metric


def row_values(row: PerfRow) -> Iterable[tuple[str, float]]:
    """(figure, value) of each quantity a row printed: its own time as ``us``, then its metrics."""
    time = printed_us(row)
    if time is not None:
        yield "us", time
    for key, value in row.metrics.items():
        if value is not None and key != f"{row.stat}_us":
            yield key, value


RowKey = tuple[str | None, str, str, str | None, str]  # table, shape, name, stat, metric: a figure's identity
Process = int | None  # a repeated run's number (``run``); None: the one process of rows without one


def process_values(rows: Iterable[PerfRow]) -> dict[RowKey, dict[Process, list[float]]]:
    """Per figure, what each process printed, in order: a run is a process, so the rows of one run
    number are one process's, and the rows without one (a plain run; a harness's own rounds) are the
    artifact's one process. ``rows``: one side's (an A/B artifact's sides are two sets of processes).
    Compare and history take one value per process from it (the median of its list)."""
    found: dict[RowKey, dict[Process, list[float]]] = {}
    for row in rows:
        for metric, value in row_values(row):
            found.setdefault((row.table, row.shape, row.name, row.stat, metric), {}).setdefault(row.run, []).append(
                value
            )
    return found
