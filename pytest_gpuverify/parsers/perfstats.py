"""Which statistic a timing column holds, and how a row's timing columns become perf rows: one row
per measured quantity (``ck us`` and ``triton us`` are two; ``us_median``/``min_us``/``max_us``/
``runs`` are one), its ``stat`` from the column name, its min and max in ``min_us``/``max_us``, its
count in ``runs``, other spread columns (stdev, p99) in ``metrics`` as ``<stat>_us``.

``us_median`` holds the row's printed time only when that is a median (``median``, ``p50``) or a
time whose statistic is not named (``stat`` null): a reader of ``us_median`` never gets a mean or a
minimum. A mean (aiter's ``avg``) goes to ``metrics["mean_us"]``, a p99 to ``metrics["p99_us"]``;
a min or max printed alone to ``min_us``/``max_us``. :func:`printed_us` reads the row's own time back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

_STAT = re.compile(
    r"(?:^|(?<=[\s_(:/\-]))(median|med|p50|mean|avg|average|min|max|p\d{1,3}(?:\.\d+)?|std|stdev|stddev|sd)"
    r"(?=$|[\s_)(:/\-])",
    re.I,
)
_UNIT_WORD = re.compile(r"(?:^|(?<=[\s_(:/\-]))(?:gpu\s+)?(?:us|usec|µs|ms|ns|s|sec|time)(?=$|[\s_)(:/\-])", re.I)
RUNS = re.compile(r"^(?:n[_ ]?|num[_ ]?)?(?:runs|iters|iterations|reps|repeats|samples|count)$", re.I)
_SYNONYM = {"med": "median", "avg": "mean", "average": "mean", "std": "stdev", "stddev": "stdev", "sd": "stdev"}
_PRIMARY = ("median", "p50", None, "mean", "min", "max")  # which column a quantity's row is named by


TO_US = {"ms": Decimal(1000), "ns": Decimal("0.001"), "s": Decimal(1000000)}
_SCALED_UNIT = re.compile(r"(?:^|(?<=[\s_(:]))(ms|ns)(?=$|[\s_)])", re.I)


def to_us(text: str, per_unit: Decimal) -> float | None:
    """A printed time in microseconds, exactly as printed (``0.0123`` ms -> ``12.3``)."""
    try:
        return float(Decimal(text.strip().replace(",", "")) * per_unit)
    except InvalidOperation:
        return None


def unit_of(name: str) -> str:
    """A time column's unit: ``ms``/``ns`` when its name says so, else ``us``."""
    match = _SCALED_UNIT.search(name)
    return match[1].lower() if match else "us"


def time_stat(name: str) -> tuple[str, str | None]:
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
    stat: str | None = None
    us_median: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    spread: dict[str, float | None] = field(default_factory=dict)


@dataclass
class ColumnGroup:
    """The time columns of one measured quantity: ``(column index, name, stat)``, the column that
    names the row first (:data:`_PRIMARY` order). Worked out once per table, from its header."""

    members: list[tuple[int, str, str | None]]


def group_columns(columns: list[tuple[int, str]]) -> list[ColumnGroup]:
    """A table's time columns ``(index, name)`` grouped by what they time (the name less its
    statistic and unit). A group naming one statistic twice is not one quantity: each column is its own."""
    groups: dict[str, list[tuple[int, str, str | None]]] = {}
    for index, name in columns:
        provider, stat = time_stat(name)
        groups.setdefault(provider, []).append((index, name, stat))
    out = []
    for members in groups.values():
        stats = [stat for _, _, stat in members]
        if len(set(stats)) < len(stats):
            out += [ColumnGroup([member]) for member in members]
            continue
        rank = {s: i for i, s in enumerate(_PRIMARY)}
        out.append(ColumnGroup(sorted(members, key=lambda m: rank.get(m[2], len(rank)))))
    return out


def quantities_of(groups: list[ColumnGroup], values: dict[int, float | None]) -> list[Quantity]:
    """One row's quantities: ``values`` are its time cells in µs by column index (None: NaN;
    a column absent: its cell was empty)."""
    out = []
    for group in groups:
        present = [m for m in group.members if m[0] in values]
        if not present:
            continue
        q = Quantity(name=present[0][1], stat=present[0][2])
        for index, _, stat in present:
            place(q, stat, values[index])
        out.append(q)
    return out


def quantities(columns: list[tuple[str, float | None]]) -> list[Quantity]:
    """The row's time columns (name, value in µs; None for NaN), grouped into quantities."""
    groups = group_columns([(i, name) for i, (name, _) in enumerate(columns)])
    return quantities_of(groups, {i: value for i, (_, value) in enumerate(columns)})


MEDIANS = ("median", "p50", None)
FIELD_OF = {"median": "us_median", "p50": "us_median", None: "us_median", "min": "min_us", "max": "max_us"}


def place(row, stat: str | None, value: float | None) -> None:
    """Put a time of statistic ``stat`` into its field of ``row`` (a :class:`Quantity` or PerfRow)."""
    if stat in MEDIANS:
        row.us_median = value
    elif stat == "min":
        row.min_us = value
    elif stat == "max":
        row.max_us = value
    else:
        (row.spread if isinstance(row, Quantity) else row.metrics)[f"{stat}_us"] = value


def printed_us(row) -> float | None:
    """The time a perf row reports, in µs, whatever its statistic (for display)."""
    if row.stat in MEDIANS:
        return row.us_median
    if row.stat in ("min", "max"):
        return row.min_us if row.stat == "min" else row.max_us
    return row.metrics.get(f"{row.stat}_us")
