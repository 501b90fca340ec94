"""Column classes of printed tables (the ``ret[...]`` column names of aiter's op_tests): which columns are times, throughputs, errors,
ratios or part of the shape, and which throughput belongs to which time column."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Optional

from pytest_gpuverify.parsers.lines import is_ellipsis
from pytest_gpuverify.parsers.perfstats import RUNS, TO_US, ColumnGroup, group_columns, unit_of


# Column classes; the first that matches wins, so ``bwd_us`` is a time, not a bandwidth.
COLUMN_CLASSES = [
    ("runs", RUNS),  # a timing's count: the row's ``runs``, not part of its shape
    ("metric", re.compile(r"tflops|tb/s|gb/s|gb_per_sec|tok/s|(^|[ _:])bw($|[ _(])", re.I)),
    # test_quant's ``ck dq``/``ck sq`` are us; ms and ns are converted to us (perfstats.unit_of)
    ("time", re.compile(r"(^|[ _:(])(us|µs|ms|ns)($|[ _)])|(^|[ _])[ds]q$", re.I)),
    ("err", re.compile(r"(^|[ _:])err($|[ _(])|logits_diff", re.I)),
    # Ratios and other verdict-like columns vary per run; keeping them out of the shape lets two
    # runs of the same shape compare.
    ("ratio", re.compile(r"uplift|speedup|ratio|gain|^[\w ]+/[\w ]+$", re.I)),
    ("ignore", re.compile(r"(^|[ _])(cos|mre|all_close|result|status|leak)($|[ _(])", re.I)),
]
TIME_WORD = re.compile(r"(^|[ _:(])(us|µs|ms|ns|dq|sq)(?=$|[ _)])", re.I)
METRIC_WORD = re.compile(r"tflops|tb/s|gb/s|gb_per_sec|tok/s|(^|[ _:])bw(?=$|[ _(])|[()]", re.I)


def provider_of(name: str, word: re.Pattern[str]) -> str:
    """``ck TFLOPS`` -> ``ck``, ``triton_us`` -> ``triton``, ``us`` -> ``""``."""
    text = word.sub(" ", name)
    return " ".join(text.replace("_", " ").replace(":", " ").replace("(", " ").replace(")", " ").split()).lower()


@dataclass
class Column:
    name: str
    kind: str  # time | metric | err | ratio | ignore | shape | elided
    metrics: list[int] = field(default_factory=list)  # for a time column: its metric columns


def classify_columns(names: list[str]) -> list[Column]:
    cols = []
    for name in names:
        kind = "elided" if is_ellipsis(name) else "shape" if name else "ignore"
        if kind == "shape":
            kind = next((k for k, rx in COLUMN_CLASSES if rx.search(name)), "shape")
        cols.append(Column(name, kind))
    times = [i for i, c in enumerate(cols) if c.kind == "time"]
    time_providers = {i: provider_of(cols[i].name, TIME_WORD) for i in times}
    for j, col in enumerate(cols):
        if col.kind != "metric":
            continue
        provider = provider_of(col.name, METRIC_WORD)
        owners = [i for i in times if time_providers[i] == provider]
        if not owners and len(times) == 1:
            owners = times  # ``TFLOPS`` next to the only time column belongs to it
        for i in owners:
            cols[i].metrics.append(j)
    return cols


@dataclass
class Table:
    header_line: int
    columns: list[Column]
    wrapped: bool = False
    title: Optional[str] = None  # the title printed over it (``gemm summary (markdown)``): part of each row's key
    rows: int = 0
    elided_rows_seen: bool = False
    _plan: Optional["RowPlan"] = field(default=None, repr=False)

    def plan(self) -> "RowPlan":
        """Which cells of a row to read, worked out once for the table's rows."""
        if self._plan is None:
            cols = self.columns
            self._plan = RowPlan(
                shape=[(i, c.name) for i, c in enumerate(cols) if c.kind == "shape"],
                ratios=[(i, c.name) for i, c in enumerate(cols) if c.kind == "ratio"],
                values=[(i, c, [(j, cols[j].name) for j in c.metrics])
                        for i, c in enumerate(cols) if c.kind in ("err", "time")],
                runs=[i for i, c in enumerate(cols) if c.kind == "runs"],
                groups=group_columns([(i, c.name) for i, c in enumerate(cols) if c.kind == "time"]),
                scale=[TO_US.get(unit_of(c.name)) if c.kind == "time" else None for c in cols],
            )
        return self._plan


@dataclass
class RowPlan:
    shape: list[tuple[int, str]]  # (cell index, column name), in column order
    ratios: list[tuple[int, str]]
    values: list[tuple[int, Column, list[tuple[int, str]]]]  # err and time columns, a time's metric columns
    runs: list[int] = field(default_factory=list)  # count columns
    groups: list[ColumnGroup] = field(default_factory=list)  # the time columns, one group per measured quantity
    scale: list[Optional[Decimal]] = field(default_factory=list)  # per column: ms/ns -> us, None for us
