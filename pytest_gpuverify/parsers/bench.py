"""Parser for a bench harness or one-off script (Triton ``perf_report`` tables, and the FlyDSL benches).

It reads, in one pass: Triton ``perf_report`` tables (a ``<plot_name>:`` title, a header, rows with
an integer index; both the full ``to_string`` form and the old ``print(df)`` form cut with ``..``
rows and a ``[N rows x M columns]`` footer; each row's ``table`` is the title, so the rows of two
tables never share a key), whitespace-aligned perf tables whose header names a
unit (``FlyDSL(us)``, ``TB/s``, ``speedup``), FlyDSL's ``=== Benchmark: current vs X ===`` blocks,
and, through the aiter parser fed the same lines, ``[checkAllclose ...]`` lines, ``[perf]`` lines and
markdown/pandas summaries. A/B harnesses name the side of a row with a ``side`` column, a line
prefix ``A:``/``B:``/``[A]``/``[B]``, or a column name ending `` (A)``/`` (B)``: that is ``PerfRow.side``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

from pytest_gpuverify.records.artifact import PerfRow
from pytest_gpuverify.parsers.aiter import _AiterParser
from pytest_gpuverify.parsers.lines import NUMBER, is_ellipsis, read_number, strip_ansi, strip_ci_prefix
from pytest_gpuverify.parsers.perfstats import RUNS, TO_US, quantities, to_us
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.parsers.triggers import BENCH

_SPLIT = re.compile(r"\s{2,}")
_TITLE = re.compile(r"^(?P<plot>[^\s|\[].{0,200}):$")
_INDEXED_ROW = re.compile(r"^(?P<idx>\d+)\s+(?P<rest>\S.*)$")
_ELIDED_ROW = re.compile(r"^\.\.(?:\s+\.{2,})*\s*$")
_FOOTER = re.compile(r"^\[(?P<rows>\d+) rows x (?P<cols>\d+) columns\]$")
_COMPARE_HEAD = re.compile(r"^=== Benchmark: current vs (?P<base>\S+) ===$")
_COMPARE_ROW = re.compile(
    rf"^(?P<op>\S+) (?P<shape>\S+) (?P<dtype>\S+)\s+(?P<base>[^\s=]+)=\s*(?P<bv>{NUMBER}) (?P<unit>\S+)"
    rf"\s+current=\s*(?P<cv>{NUMBER}) \S+"
)
_US = re.compile(r"(?:^|[\s_(])(?:gpu\s+)?(?:us|usec|µs)(?:$|[\s_)])", re.I)
_MS = re.compile(r"(?:^|[\s_(])ms(?:$|[\s_)])", re.I)
_NS = re.compile(r"(?:^|[\s_(])ns(?:$|[\s_)])", re.I)
_S = re.compile(r"(?:^|[\s_(])(?:s|sec|secs|seconds)(?:$|[\s_)])", re.I)
_TIME_KINDS = ("us", "ms", "ns", "s")
_TO_US = TO_US
_METRIC = re.compile(r"[tgm]flops|[tgm]b/s|gbps|bandwidth|tok/s", re.I)
_RATIO = re.compile(r"speedup|ratio|uplift|(?:^|\s)vs(?:\s|$)|/|gain|delta", re.I)
_UNITISH = re.compile(r"us\b|ms\b|ns\b|\(s\)|_s\b|sec\b|flops|b/s|gbps|bandwidth|tok/s", re.I)  # a header names at least one unit
# How pandas prints a perf_report's x value: a column of whole numbers as ``4096`` or ``4096.0``; any
# other float column with the same decimals in every row, so ``1024.000000`` is a line's figure.
_X_VALUE = re.compile(r"-?\d+(?:\.0)?")
_RATIO_CELL = re.compile(r"[-+]?[\d.,]+[x%]")
_SIDE_PREFIX = re.compile(r"^(?:\[(?P<b>[ABab]|base|head)\]|(?P<c>[ABab]):)\s+")
_SIDE_SUFFIX = re.compile(r"^(?P<name>.*\S)\s*\((?P<side>[ABab]|base|head)\)$")
_EMPTY_WORDS = {"", "-", "none", "skip", "skipped", "missing", "n/a", "na"}
_SIDE_COLUMN = "side"
_VALUE_KINDS = (*_TIME_KINDS, "metric", "line")


def cell_number(text: str) -> tuple[str, Optional[float]]:
    """A printed cell: thousands separators and a trailing ``x``/``%`` go; ``-``/``skip`` are empty."""
    t = text.strip().replace(",", "")
    if t.lower() in _EMPTY_WORDS:
        return "empty", None
    if t[-1:] in ("x", "%") and len(t) > 1:
        t = t[:-1]
    return read_number(t)


def ms_to_us(text: str) -> Optional[float]:
    """The printed milliseconds times 1000, exactly as printed (``0.0123`` -> ``12.3``)."""
    return to_us(text, Decimal(1000))


def split_row(text: str, n: int) -> Optional[list[str]]:
    cells = _SPLIT.split(text.strip())
    if len(cells) == n:
        return cells
    cells = text.split()
    return cells if len(cells) == n else None


def column_kind(name: str, unit_hint: str = "") -> str:
    if name.strip().lower() == _SIDE_COLUMN:
        return "side"
    if RUNS.match(name.strip()):
        return "runs"
    for kind, rx in (("us", _US), ("ms", _MS), ("ns", _NS), ("s", _S), ("metric", _METRIC)):
        if rx.search(name):
            return kind
    if _RATIO.search(name):
        return "ratio"
    return unit_hint or "plain"


def split_side(name: str) -> tuple[str, Optional[str]]:
    match = _SIDE_SUFFIX.match(name)
    return (match["name"], match["side"]) if match else (name, None)


@dataclass
class _Table:
    header_line: int
    title: str  # the perf_report plot name; "" for an untitled table
    names: list[str]
    indexed: bool
    kinds: Optional[list[str]] = None
    rows: int = 0
    cut_reported: bool = False


class TableReader:
    """Perf tables read as lines stream past. ``rec`` records: ``fail``/``problem``/``add_perf``."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.title: Optional[tuple[int, str]] = None  # a title line waiting for its header
        self.pending: Optional[_Table] = None  # a header waiting for its first row
        self.table: Optional[_Table] = None
        self.compare: Optional[str] = None  # the base named by ``=== Benchmark: current vs X ===``
        self.last: Optional[_Table] = None  # the table that ended last: a pandas footer may follow it

    def is_open(self) -> bool:
        """A title, header, table or comparison is open: the next line matters whatever it holds."""
        return self.title is not None or self.pending is not None or self.table is not None or self.compare is not None

    def feed(self, lineno: int, text: str, side: Optional[str] = None) -> bool:
        """Read one (ANSI-free) line; True when it belonged to a table."""
        if self.table is not None:
            if self._row(self.table, lineno, text, side):
                return True
            if self._cut(self.table, lineno, text):
                return True
            self.last, self.table = self.table, None
        if self.compare is not None:
            match = _COMPARE_ROW.match(text.strip())
            if match:
                self._compare_row(lineno, match, side)
                return True
            self.compare = None
        if self.pending is not None:
            table, self.pending = self.pending, None
            if self._row(table, lineno, text, side):
                self.table = table
                return True
        if self.title is not None:
            (title_line, title), self.title = self.title, None
            names = _SPLIT.split(text.strip())
            if text[:1].isspace() and text.strip() and not any(cell_number(n)[0] == "num" for n in names):
                self.pending = _Table(title_line, title, names, indexed=True)
                return True
        return self._detect(lineno, text)

    def _detect(self, lineno: int, text: str) -> bool:
        stripped = text.strip()
        if not stripped or stripped[0] == "|":
            return False
        if stripped[0] == "[" and self.last is not None and _FOOTER.match(stripped):
            table, self.last = self.last, None
            return self._cut(table, lineno, stripped)
        if stripped.startswith("==="):
            match = _COMPARE_HEAD.match(stripped)
            if match:
                self.compare = match["base"]
                return True
            return False
        if stripped[-1] == ":" and text[0] not in " \t":
            match = _TITLE.match(stripped)
            if match and "summary" not in stripped.lower():
                self.title = (lineno, match["plot"])
            return False
        if "  " not in stripped or not _UNITISH.search(stripped):
            return False
        names = _SPLIT.split(stripped)
        if len(names) >= 3 and all(cell_number(n)[0] in ("bad",) for n in names):
            if any(column_kind(n) in (*_TIME_KINDS, "metric") for n in names):
                self.pending = _Table(lineno, "", names, indexed=False)
        return False

    def _cut(self, table: _Table, lineno: int, text: str) -> bool:
        stripped = text.strip()
        footer = _FOOTER.match(stripped)
        if not (_ELIDED_ROW.match(stripped) or footer):
            return False
        if not table.cut_reported:
            table.cut_reported = True
            what = f"perf_report table '{table.title}'" if table.title else f"table at line {table.header_line}"
            detail = f", {table.rows} of {footer['rows']} rows printed" if footer else ""
            self.rec.problem(f"line {lineno}: {what} is cut short by pandas (print(df)){detail}; "
                             "only the printed rows are read")
        if footer and self.table is table:
            self.last, self.table = table, None
        return True

    def _row(self, table: _Table, lineno: int, text: str, side: Optional[str]) -> bool:
        body = text
        if table.indexed:
            match = _INDEXED_ROW.match(text.strip())
            if match is None:
                return False
            body = match["rest"]
        cells = split_row(body, len(table.names))
        if cells is None:
            return False
        if table.kinds is None:
            kinds = self._classify(table, cells)
            if kinds is None:
                return False
            table.kinds = kinds
            if any(is_ellipsis(n) for n in table.names):
                where = f"line {table.header_line}"
                self.rec.problem(f"{where}: table has elided columns ('...'); rerun with COLUMNS=10000")
        if not any(cell_number(c)[0] != "bad" for c, k in zip(cells, table.kinds) if k in _VALUE_KINDS):
            return False
        table.rows += 1
        self._perf(table, lineno, cells, side)
        return True

    def _classify(self, table: _Table, first: list[str]) -> Optional[list[str]]:
        """Each column's kind, from its name and the first row. A perf_report (``indexed``) prints its
        x columns first, then its lines: the x columns are the leading ones whose first cell is a
        whole number as pandas prints one (``4096.0``) or no number at all (``llama3-8B``); the first
        other column and every column after it is a line (or a unit its name says), whatever its
        values look like; the last column is one in any case."""
        hint = column_kind(table.title) if table.title else ""
        hint = hint if hint in (*_TIME_KINDS, "metric") else ""
        kinds = [column_kind(n) for n in table.names]
        if table.indexed:
            in_x = True
            for i, (kind, cell) in enumerate(zip(kinds, first)):
                in_x = in_x and kind == "plain" and (_X_VALUE.fullmatch(cell) is not None or cell_number(cell)[0] == "bad")
                if in_x:
                    kinds[i] = "x"
                elif kind == "plain":
                    kinds[i] = hint or "line"
            if kinds and kinds[-1] == "x":
                kinds[-1] = hint or "line"
        else:
            for i, (kind, cell) in enumerate(zip(kinds, first)):
                if kind == "plain":
                    kinds[i] = "ratio" if _RATIO_CELL.fullmatch(cell.strip()) else "x"
        if not any(k in _VALUE_KINDS for k in kinds):
            return None
        return kinds

    def _perf(self, table: _Table, lineno: int, cells: list[str], side: Optional[str]) -> None:
        kinds = table.kinds or []
        names = table.names
        shape = ", ".join(f"{n}={c}" for n, c, k in zip(names, cells, kinds) if k == "x" and c)
        where = f" ({shape})" if shape else ""
        row_side = next((c for c, k in zip(cells, kinds) if k == "side" and c), None) or side
        numbers: dict[int, Optional[float]] = {}
        for i, (name, cell, kind) in enumerate(zip(names, cells, kinds)):
            if kind in ("x", "side"):
                continue
            state, value = cell_number(cell)
            if state == "num" and kind in _TO_US:
                value = to_us(cell, _TO_US[kind])
            if state in ("nan", "inf") and kind != "ratio":
                self.rec.nan_count += 1
                self.rec.fail(f"line {lineno}: {state} in column '{name}'{where}")
            if state == "num" or (state in ("nan", "inf") and kind != "ratio"):
                numbers[i] = value
        ratios = {names[i]: v for i, v in numbers.items() if kinds[i] == "ratio"}
        times = quantities([(names[i], numbers[i]) for i in numbers if kinds[i] in _TIME_KINDS])
        runs = next((int(v) for i, v in numbers.items() if kinds[i] == "runs" and v is not None and v.is_integer()), None)
        rest = [i for i in numbers if kinds[i] in ("metric", "line")]
        owned = rest if len(times) == 1 and all(kinds[i] == "metric" for i in rest) else []
        for q in times:
            metrics = {names[j]: numbers[j] for j in owned}
            metrics.update(q.spread)
            metrics.update(ratios)
            self._add(q.name, shape, q.us_median, metrics, row_side, lineno, table.title or None,
                      stat=q.stat, min_us=q.min_us, max_us=q.max_us, runs=runs)
        for i in rest:
            if i not in owned:
                self._add(names[i], shape, None, {names[i]: numbers[i], **ratios}, row_side, lineno, table.title or None)

    def _add(self, name: str, shape: str, us: Optional[float], metrics: dict, side: Optional[str], lineno: int,
             table: Optional[str] = None, **stats) -> None:
        name, named_side = split_side(name)
        self.rec.add_perf(PerfRow(shape=shape, name=name, us_median=us, metrics=metrics,
                                  side=named_side or side, source_line=lineno, table=table, **stats))

    def _compare_row(self, lineno: int, match: re.Match[str], side: Optional[str]) -> None:
        shape = f"op={match['op']}, shape={match['shape']}, dtype={match['dtype']}"
        unit = match["unit"]
        for who, text in ((match["base"], match["bv"]), ("current", match["cv"])):
            state, value = read_number(text)
            if state != "num":
                self.rec.nan_count += 1
                self.rec.fail(f"line {lineno}: {state} for {who} ({shape})")
            us = value if unit == "us" else None
            metrics = {} if unit == "us" else {unit: value}
            self.rec.add_perf(PerfRow(shape=shape, name=unit, us_median=us, metrics=metrics, side=who,
                                      source_line=lineno))


def apply_side(row: PerfRow, side: Optional[str]) -> None:
    """A row read on an ``A:``/``[B]`` line, or named ``... (A)``, or with ``side=A`` in its shape."""
    name, named = split_side(row.name)
    if named and row.side is None:
        row.name, row.side = name, named
    if row.side is None and side:
        row.side = side
    if "side=" in row.shape:
        parts = row.shape.split(", ")
        taken = [p for p in parts if p.lower().startswith("side=")]
        if taken:
            row.shape = ", ".join(p for p in parts if p not in taken)
            row.side = row.side or taken[0].split("=", 1)[1]


class _BenchParser:
    """The aiter parser plus the table reader, over the same lines."""

    triggers = BENCH

    def __init__(self, context: Optional[ParseContext] = None) -> None:
        self.aiter = _AiterParser(context)
        self.aiter.out.parser = "bench"
        self.aiter.any_title_perf = False  # the TableReader makes perf rows of titled tables; the aiter side checks err
        self.out = self.aiter.out
        self.problem = self.aiter.problem
        self.tables = TableReader(self.aiter)

    def wants_every_line(self) -> bool:
        return self.aiter.wants_every_line() or self.tables.is_open()

    def feed(self, lineno: int, raw: str) -> None:
        text = strip_ansi(raw) if "\x1b" in raw else raw
        if text[:1].isdigit() and "Z " in text[:40]:
            text = strip_ci_prefix(text)
        c0 = text[:1]
        side = None
        if c0 and c0 in "[ABab" and (match := _SIDE_PREFIX.match(text)):
            side = match["b"] or match["c"]
            text = text[match.end():]
        perf = self.out.perf
        before = len(perf)
        self.aiter.feed(lineno, text)
        self.tables.feed(lineno, text, side)
        if len(perf) > before:
            for row in perf[before:]:
                apply_side(row, side)

    def finish(self, reader) -> ParsedOutput:
        return self.aiter.finish(reader)


