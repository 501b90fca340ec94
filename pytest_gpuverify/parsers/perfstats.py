"""Which statistic a timing column holds, and how a row's timing columns become perf rows: one row
per measured quantity (``ck us`` and ``triton us`` are two; ``us_median``/``min_us``/``max_us``/
``runs`` are one), its ``stat`` from the column name, its min and max in ``min_us``/``max_us``, its
count in ``runs``, other spread columns (stdev, p99) in ``metrics`` as ``<stat>_us``.

``us_median`` holds the row's printed time when that is a median, a time whose statistic is not
named (``stat`` null), or a mean (``stat: mean``, as aiter's ``avg`` lines: the artifact has no
other field for it); a quantity printed only as a min or a max has ``us_median`` null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_STAT = re.compile(
    r"(?:^|(?<=[\s_(:/\-]))(median|med|p50|mean|avg|average|min|max|p\d{1,3}(?:\.\d+)?|std|stdev|stddev|sd)"
    r"(?=$|[\s_)(:/\-])", re.I)
_UNIT_WORD = re.compile(r"(?:^|(?<=[\s_(:/\-]))(?:gpu\s+)?(?:us|usec|µs|ms|ns|s|sec|time)(?=$|[\s_)(:/\-])", re.I)
RUNS = re.compile(r"^(?:n[_ ]?|num[_ ]?)?(?:runs|iters|iterations|reps|repeats|samples|count)$", re.I)
_SYNONYM = {"med": "median", "avg": "mean", "average": "mean", "std": "stdev", "stddev": "stdev", "sd": "stdev"}
_PRIMARY = ("median", "p50", None, "mean", "min", "max")  # which column a quantity's row is named by


def time_stat(name: str) -> tuple[str, Optional[str]]:
    """``us_median`` -> ``("", "median")``; ``triton min us`` -> ``("triton", "min")``; ``ck us`` -> ``("ck", None)``."""
    match = _STAT.search(name)
    stat = _SYNONYM.get(match[1].lower(), match[1].lower()) if match else None
    rest = _STAT.sub(" ", name) if match else name
    provider = " ".join(_UNIT_WORD.sub(" ", rest).replace("_", " ").replace("(", " ").replace(")", " ").split())
    return provider.lower(), stat


@dataclass
class Quantity:
    """One measured quantity of a row: its columns' values in microseconds, by statistic."""

    name: str = ""  # the column that names the row
    stat: Optional[str] = None
    us_median: Optional[float] = None
    min_us: Optional[float] = None
    max_us: Optional[float] = None
    spread: dict[str, Optional[float]] = field(default_factory=dict)


def quantities(columns: list[tuple[str, Optional[float]]]) -> list[Quantity]:
    """The row's time columns (name, value in µs; None for NaN), grouped into quantities."""
    groups: dict[str, list[tuple[str, Optional[str], Optional[float]]]] = {}
    for name, value in columns:
        provider, stat = time_stat(name)
        groups.setdefault(provider, []).append((name, stat, value))
    out = []
    for members in groups.values():
        stats = [stat for _, stat, _ in members]
        if len(set(stats)) < len(stats):  # the same statistic twice: not one quantity
            out += [_single(name, stat, value) for name, stat, value in members]
            continue
        primary = next((s for s in _PRIMARY if s in stats), stats[0])
        q = Quantity()
        for name, stat, value in members:
            if stat == primary:
                q.name, q.stat = name, stat
                if stat in ("median", "p50", None, "mean"):
                    q.us_median = value
            if stat == "min":
                q.min_us = value
            elif stat == "max":
                q.max_us = value
            elif stat != primary:
                q.spread[f"{stat}_us"] = value
        out.append(q)
    return out


def _single(name: str, stat: Optional[str], value: Optional[float]) -> Quantity:
    return quantities([(name, value)])[0]
