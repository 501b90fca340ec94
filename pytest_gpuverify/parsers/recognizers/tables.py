"""Every printed table, whatever its layout (:mod:`..reading.tables`), read by one rule: its columns
classified once from the header (:mod:`..reading.columns`), then each row (:mod:`.table_rows`):

- **checks**: a status, correctness or accuracy cell that says pass or fail is a check
  (``| 128 | 4096 | FAIL |``, a ``Correctness`` column of ``PASS``, tritonbench's ``-accuracy`` of 1);
  a ``Status`` of ``ERROR`` proves nothing (a problem); an aiter ``err`` cell is a check against the
  tolerance (0.05, or the declared ``err_ratio_max``); an error figure is a check where the row has a
  tolerance column (hipBLASLt's ``norm_error`` under ``atol``), else a measure, its worst kept;
- **perf rows**: one per measured quantity: a time column (or a group of them: ``us_median``,
  ``min_us``, ``max_us``) with its unit from the header, in µs, the throughput columns of its
  provider in its ``metrics``; a throughput or a perf_report line of no time its own row; ratios in
  every row's ``metrics``, never its shape; the row's ``shape`` the columns that identify the case,
  its ``table`` the title printed over the table (so two tables never share a key; a title printed
  again with rows of one key is told apart: :mod:`.table_names`), its ``side``
  from a ``side`` column, a ``(A)``/``(B)`` in the column's name, or the line's prefix;
- **nothing printed is dropped**: ``nan``/``inf`` where a figure was due is a failure (its row kept,
  value null); a negative time cannot be one (its row kept, value null, a note; a problem when no
  other figure was printed); an unreadable cell, elided columns or rows, a wrapped frame, a header
  whose rows do not fit it are problems.

A Triton ``perf_report`` (a pandas frame with its index, under its plot's title) reads its x
columns as the row's shape: the leading ones whose first cell is a whole number as pandas prints
one (``4096.0``) or no number at all (``llama3-8B``); every column from the first other one on is a
line (a figure whose unit only the title may name), whatever its values look like.
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.columns import (
    Table,
    classify,
    classify_columns,
    time_unit,
)
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.statements import status_of_cell
from pytest_gpuverify.parsers.reading.tables import (
    AlignedTableStream,
    RuledTables,
    csv_cells,
    is_ellipsis,
    is_rule,
    split_names,
    split_row,
)
from pytest_gpuverify.parsers.recognizers.table_names import config_of
from pytest_gpuverify.parsers.recognizers.table_rows import RowReader, cell_number
from pytest_gpuverify.parsers.recognizers.table_triggers import TRIGGERS
from pytest_gpuverify.parsers.registry import TABLES, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext

SAMPLE_ROWS = 64  # rows read before a whitespace table's column edges are fixed
_TITLE = re.compile(r"^[^\s|\[].{0,200}:$")  # a title over a table (``gemm summary:``, ``softmax-performance:``)
_HEADING = re.compile(r"^\s*(?:#+\s*|=+\s*)?(?:operator|kernel|benchmark|bench|table|performance)\b[^|]{0,200}$", re.I)
_FOOTER = re.compile(r"^\[(?P<rows>\d+) rows x (?P<cols>\d+) columns\]$")
_INDEXED_ROW = re.compile(r"^(?P<idx>\d+)\s+(?P<rest>\S.*)$")
_ELIDED_ROW = re.compile(r"^\.\.(?:\s+\.{2,})*\s*$")
_ORPHAN_ELIDED_ROW = re.compile(r"^\d+\s{2,}\S.*\s\.{3,}\s")  # pandas rows with ``...`` and no header seen
# How pandas prints a perf_report's x value: a column of whole numbers as ``4096`` or ``4096.0``; any
# other float column with the same decimals in every row, so ``1024.000000`` is a line's figure.
_TOKEN_SPAN = re.compile(r"\S+")
_UNIT_TOKEN = re.compile(r"\([^()\s]{1,12}\)")  # ``(us)``, ``(GB/s)``, ``(elements)``
_X_VALUE = re.compile(r"-?\d+(?:\.0)?")
_RATIO_CELL = re.compile(r"[-+]?[\d.,]+[x%]")
_CSV_LABEL = re.compile(r"^(?P<label>[A-Za-z_]\w*):\s+(?P<rest>\S.*)$")
_CSV_NAME = re.compile(r"^[A-Za-z_#][\w\-./()#]*$")  # ``transA``, ``hipblaslt-Gflops``, ``time-us``, ``us``
_CHECKED = ("correct", "accuracy", "err", "time", "throughput", "line")
_TWO_NAMES = re.compile(
    r"(?:^|[\s_:|(\-])err(?:$|[\s_(|)])|accura|valid|correct|verif|flops|[gt]b/s|latency|\((?:us|ms)\)", re.I
)
_INTERESTING = ("time", "throughput", "status", "correct", "accuracy", "err", "error", "measure", "line", "wrong")


def _interesting_header(text: str) -> bool:
    """Names two spaces apart, one of them of a class worth a table (a unit, a verdict, an error); with
    only two, one of them a verdict's or an error's."""
    names = split_names(text)
    if len(names) < 2 or any(cell_number(n)[0] == "num" or "=" in n for n in names):
        return False  # numbers, ``key=value`` pairs: a row or a statement, no header
    if len(names) == 2 and not _TWO_NAMES.search(text):
        return False  # (the triggers find a header of two names by these words)
    classes = {classify(n) for n in names}
    return bool(classes & set(_INTERESTING if len(names) > 2 else _CHECKED))


class Tables(RecognizerBase):
    name = "tables"
    stage = TABLES
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.rows = RowReader(context, ev)
        self.ruled = RuledTables(self._ruled_row, ev.problem, simple_headers=_interesting_header)
        self.ruled_table: Table | None = None
        self.heading: tuple[int, str] | None = None  # the last heading or title line read
        self.title: tuple[int, str] | None = None  # a title waiting for its table's header
        self.aligned: AlignedTableStream | None = None  # a pandas-printed table after a title
        self.aligned_table: Table | None = None
        self.aligned_frame = False  # a perf_report: its x columns, then its lines
        self.aligned_title: str | None = None
        self.pending: Table | None = None  # a header two spaces apart, waiting for its first row
        self.split: Table | None = None
        self.csv: Table | None = None
        self.csv_label: str | None = None  # a label every line of the CSV table starts with
        self.last: Table | None = None  # the table that ended last: a pandas footer may follow it
        self.orphan_noted = False
        self.previous: tuple[int, str] | None = None  # the last line no table took: group labels, maybe
        self.side: str | None = None

    def wants_every_line(self) -> bool:
        return (
            self.aligned is not None
            or self.ruled.is_open()
            or self.title is not None
            or self.pending is not None
            or self.split is not None
            or self.csv is not None
        )

    def holds_from(self) -> int | None:
        """An aligned table keeps its first rows until their column edges are known."""
        return self.aligned.header_line if self.aligned is not None else None

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        if line.ends_tables or line.record_start:
            self.end()
        self.side = line.side
        rows = self.rows.rows_read
        self._take(line.lineno, line.text)
        self.side = None
        if self.rows.rows_read != rows or self.aligned is not None:
            line.figures_read = True  # a table's row (or kept for one): its figures are the table's

    def close(self) -> None:
        self.end()

    def finish(self) -> None:
        self.rows.finish()

    # ----- where tables start and end -----------------------------------------------------------
    def end(self) -> None:
        self.title = self.pending = None
        self.ruled.end()
        self.ruled_table = None
        while self.aligned is not None:  # a handed-back line may open another table; each is shorter
            self._aligned_rows(*self.aligned.close())
        self._close_split()
        self.csv = None

    def _take(self, lineno: int, text: str) -> None:
        if self.aligned is not None:
            self._aligned_rows(*self.aligned.push(lineno, text))
            return
        if self.split is not None:
            if self._split_line(self.split, lineno, text):
                return
            self._close_split()
        if self.csv is not None:
            body = text
            if self.csv_label is not None:
                prefixed = _CSV_LABEL.match(text.strip())
                body = prefixed["rest"] if prefixed is not None and prefixed["label"] == self.csv_label else ""
            cells = csv_cells(body)
            if cells is not None and len(cells) == len(self.csv.columns):
                self.rows.read(self.csv, lineno, cells, self.side)
                return
            self.csv = self.csv_label = None
        if self.title is not None:
            title = self.title[1]
            self.title = None
            stripped = text.strip()
            # a summary's title may head any pandas table; another title only a header that looks like one
            looks = "summary" in title.lower() or text[:1] == " " or "  " in stripped
            if stripped and text[0] not in "[|" and stripped != "Empty DataFrame" and looks and bar_free(text):
                self.aligned = AlignedTableStream(lineno, text.rstrip(), SAMPLE_ROWS)
                self.aligned_frame = "summary" not in title.lower()
                self.aligned_title = title
                return
        if self.pending is not None:
            table, self.pending = self.pending, None
            if self._units_line(table, text):
                self.pending = table  # a second header line: the units of the columns above
                return
            if not is_rule(text) and self._split_line(table, lineno, text):
                self.ruled.end()  # the header's rows came without a rule: not a ruled table
                self.split = table
                return
        if self.ruled.feed(lineno, text):
            self.pending = None
            return
        self._detect(lineno, text)

    def _detect(self, lineno: int, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        c0 = stripped[0]
        if "=" in stripped and (settings := config_of(stripped)) is not None:
            self.rows.config = (lineno, settings)  # it may tell a repeated table apart (table_names.py)
        if c0 == "[" and self.last is not None and (footer := _FOOTER.match(stripped)) is not None:
            table, self.last = self.last, None
            self._cut(table, lineno, footer)
            return
        if stripped.endswith(":") and text[0] not in " \t" and _TITLE.match(stripped):
            self.title = self.heading = (lineno, stripped[:-1].strip())
            return
        if _HEADING.match(stripped):
            self.heading = (lineno, stripped)
        if "," in stripped and (cells := csv_cells(stripped)) is not None and self._csv_header(lineno, cells):
            return
        if "," in stripped and (prefixed := _CSV_LABEL.match(stripped)) is not None:
            cells = csv_cells(prefixed["rest"])
            if cells is not None and self._csv_header(lineno, cells):
                self.csv_label = prefixed["label"]  # MIOpen's ``stats: name, n, ...`` and ``stats: <row>``
                return
        header = _uncommented(text)  # rccl-tests' and nccl-tests' headers are comments (``#  size  count ...``)
        if "  " in header and _interesting_header(header) and len(split_names(header)) >= 3:
            names = self._grouped(split_names(header), lineno)
            table = Table(
                lineno, classify_columns(names, unclassified=""), title=self._title_over(lineno), layout="split"
            )
            table.header_text = header
            table.single_names = self._grouped(header.split(), lineno)  # names one space apart, maybe
            self.pending = table
            return
        if c0 == "#":
            self.previous = (lineno, header)  # a comment: it may label the groups of the columns under it
        if c0.isdigit() and not self.orphan_noted and _ORPHAN_ELIDED_ROW.match(text):
            self.orphan_noted = True
            self.ev.problem(
                f"line {lineno}: summary table rows with elided columns and no header; rerun with COLUMNS=10000"
            )

    def _grouped(self, names: list[str], lineno: int) -> list[str]:
        """Names printed twice, told apart by the group labels of the line above (``out-of-place``,
        ``in-place``), in order; else by their ordinal."""
        repeated = {n for n in names if names.count(n) > 1}
        if not repeated:
            return names
        labels: list[str] = []
        if self.previous is not None and self.previous[0] == lineno - 1:
            labels = self.previous[1].split()
            if not 1 < len(labels) <= 6 or any(classify(label) in _INTERESTING for label in labels):
                labels = []
        seen: dict[str, int] = {}
        out = []
        for name in names:
            if name not in repeated:
                out.append(name)
                continue
            k = seen[name] = seen.get(name, 0) + 1
            out.append(f"{labels[k - 1]} {name}" if k <= len(labels) else f"{name} #{k}")
        return out

    def _units_line(self, table: Table, text: str) -> bool:
        """A line of units under a header (``(B)  (elements)  (us)  (GB/s)``): each joins the column
        whose name ends where it ends; the columns are classified again."""
        header = table.header_text
        line = _uncommented(text)
        tokens = list(_TOKEN_SPAN.finditer(line))
        if not header or not tokens or not all(_UNIT_TOKEN.fullmatch(t.group()) for t in tokens):
            return False
        ends = [m.end() for m in _TOKEN_SPAN.finditer(header)]
        names = [c.name for c in table.columns]
        if len(ends) != len(names):
            if len(ends) != len(table.single_names):
                return False
            names = list(table.single_names)  # the units stand under single words: the names are those
        for token in tokens:
            if token.end() in ends:
                i = ends.index(token.end())
                names[i] = f"{names[i]} {token.group()}"
        table.columns = classify_columns(names, unclassified="")
        table._plan = None
        return True

    def _title_over(self, header_line: int) -> str | None:
        """The title or heading printed on the line just above a table's header."""
        heading = self.heading
        return heading[1] if heading is not None and heading[0] == header_line - 1 else None

    def _csv_header(self, lineno: int, cells: list[str]) -> bool:
        if any(not _CSV_NAME.match(c) for c in cells):
            return False
        columns = classify_columns(cells)
        if not any(c.kind in _INTERESTING for c in columns):
            return False
        self.csv = Table(lineno, columns, title=self._title_over(lineno), layout="csv")
        return True

    # ----- ruled tables -------------------------------------------------------------------------
    def _ruled_row(self, lineno: int, names: list[str], cells: list[str]) -> None:
        header_line = self.ruled.header_line
        table = self.ruled_table
        if table is None or table.header_line != header_line or [c.name for c in table.columns] != names:
            table = self.ruled_table = Table(
                header_line, classify_columns(names), title=self._title_over(header_line), layout="ruled"
            )
        self.rows.read(table, lineno, cells, self.side)

    # ----- tables two spaces apart (no rule) ------------------------------------------------------
    def _split_line(self, table: Table, lineno: int, text: str) -> bool:
        stripped = text.strip()
        if _ELIDED_ROW.match(stripped) or _FOOTER.match(stripped):
            return self._cut(table, lineno, _FOOTER.match(stripped))
        cells = split_row(text, len(table.columns))
        if cells is None:
            indexed = _INDEXED_ROW.match(stripped)  # a pandas frame's index before its cells
            cells = split_row(indexed["rest"], len(table.columns)) if indexed is not None else None
        if cells is None and table.rows == 0 and len(table.single_names) != len(table.columns):
            cells = split_row(text, len(table.single_names))  # the names were one space apart
            if cells is not None:
                table.columns = classify_columns(list(table.single_names), unclassified="")
                table._plan = None
        if cells is None:
            return False
        if table.rows == 0 and not self._first_row(table, cells):
            return False
        values = [c for c, col in zip(cells, table.columns) if col.kind in ("time", "throughput", "line", "ratio")]
        checks = [c for c, col in zip(cells, table.columns) if col.kind in ("status", "correct", "accuracy", "wrong")]
        if not any(cell_number(c)[0] != "bad" for c in values + checks) and not any(
            status_of_cell(c) is not None for c in checks
        ):
            return False
        self.rows.read(table, lineno, cells, self.side)
        return True

    def _close_split(self) -> None:
        if self.split is not None:
            self.last, self.split = self.split, None

    def _first_row(self, table: Table, cells: list[str]) -> bool:
        """The unclassified columns of an untitled table, by their first cell: a ratio (``1.13x``,
        ``+28.5%``) or part of the shape."""
        for col, cell in zip(table.columns, cells):
            if col.kind == "":
                col.kind = "ratio" if _RATIO_CELL.fullmatch(cell.strip()) else "shape"
        return any(c.kind in _INTERESTING for c in table.columns)

    # ----- pandas-printed tables after a title ---------------------------------------------------
    def _aligned_rows(self, rows: list[tuple[int, list[str]]], handed_back: list[tuple[int, str]]) -> None:
        stream = self.aligned
        assert stream is not None
        for lineno, cells in rows:
            if self.aligned_table is None and stream.layout is not None:
                names = stream.layout.names
                frame = self.aligned_frame and stream.layout.first_start > 0
                columns = classify_columns(names, unclassified="line" if frame else "shape")
                self.aligned_table = Table(
                    stream.header_line,
                    columns,
                    stream.layout.wrapped,
                    title=self.aligned_title,
                    layout="frame" if frame else "aligned",
                )
                if frame:
                    _x_columns(self.aligned_table, cells, self.aligned_title)
            table = self.aligned_table
            assert table is not None
            if not all(is_ellipsis(c) for c in cells if c):
                self.rows.read(table, lineno, cells, self.side)
            elif table.layout == "frame":
                self._cut(table, lineno, None)
            elif not table.elided_rows_seen:
                table.elided_rows_seen = table.cut_reported = True
                self.ev.problem(f"line {lineno}: summary table has elided rows; only the printed rows are read")
        if stream.done:
            if self.aligned_table is not None:
                self.last = self.aligned_table
            elif handed_back and handed_back[0][0] == stream.header_line:
                handed_back = self._unaligned(stream, handed_back[1:])
            self.aligned = self.aligned_table = None
            for lineno, text in handed_back:  # not the table's: they get their ordinary reading
                self._take(lineno, text)

    def _unaligned(self, stream: AlignedTableStream, lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """A titled table whose cells do not end under its header's words (printed by hand, not by
        pandas): its cells two spaces apart, after an index where it has one; the lines it does not
        take, handed back."""
        names = split_names(stream.header)
        frame = self.aligned_frame
        table = Table(
            stream.header_line,
            classify_columns(names, unclassified="line" if frame else "shape"),
            title=self.aligned_title,
            layout="frame" if frame else "aligned",
        )
        for at, (lineno, text) in enumerate(lines):
            body = text.strip()
            indexed = _INDEXED_ROW.match(body)
            if indexed is not None and split_row(indexed["rest"], len(names)) is not None:
                body = indexed["rest"]
            cells = split_row(body, len(names))
            if cells is None:
                if table.rows and (_ELIDED_ROW.match(body) or _FOOTER.match(body)):
                    self._cut(table, lineno, _FOOTER.match(body))
                    continue
                self.last = table if table.rows else self.last
                return lines[at:]
            if table.rows == 0 and frame:
                _x_columns(table, cells, self.aligned_title)
            self.rows.read(table, lineno, cells, self.side)
        self.last = table if table.rows else self.last
        return []

    def _cut(self, table: Table, lineno: int, footer: re.Match[str] | None) -> bool:
        if not table.cut_reported:
            table.cut_reported = True
            what = f"perf_report table '{table.title}'" if table.title else f"table at line {table.header_line}"
            detail = f", {table.rows} of {footer['rows']} rows printed" if footer else ""
            self.ev.problem(
                f"line {lineno}: {what} is cut short by pandas (print(df)){detail}; only the printed rows are read"
            )
        return True


def _uncommented(text: str) -> str:
    """A comment's ``#`` as a space (its columns stay where they are)."""
    return " " + text[1:] if text[:1] == "#" else text


def bar_free(text: str) -> bool:
    return "|" not in text and "│" not in text


def _x_columns(table: Table, first: list[str], title: str | None) -> None:
    """A perf_report's columns by its first row: the leading unclassified ones whose first cell is a
    whole number as pandas prints one, or no number, are x (the shape); every other unclassified one
    is a line; the last column is one in any case. A unit its title names (``... (ms)``, ``TFLOPS``)
    is its lines'."""
    hint = classify(title) if title else None
    unit = time_unit(title) if hint == "time" and title else None
    in_x = True
    last = table.columns[-1]
    for col, cell in zip(table.columns, first):
        if col.kind != "line":
            in_x = False
            continue
        in_x = in_x and (_X_VALUE.fullmatch(cell) is not None or cell_number(cell)[0] == "bad")
        if in_x and col is not last:
            col.kind = "shape"
        elif hint == "time" and unit is not None:
            col.kind, col.unit = "time", unit
        elif hint == "throughput":
            col.kind = "throughput"


RECOGNIZERS = (Tables,)
