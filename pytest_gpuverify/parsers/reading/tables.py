"""Printed tables, by layout: where a table starts, which lines are its rows, and the cells of each
row under the header's names. What the columns mean is the classifier's (:mod:`.columns`); what the
cells say, the tables recognizer's.

Layouts:

- **ruled**: markdown and tabulate's ``pipe``/``github`` (``|---|``), ``grid`` (``+---+``, ``+===+``),
  box-drawing tables (``│ ─ ┼``, rich's ``┃ ━ ╇``), the same without outer bars or indented, a header
  of two bar rows above its rule (their names joined by column); tabulate's ``simple`` (a header over
  a rule of dashes per column) and a header over one long rule of dashes, its cells two spaces apart
  (FlagGems' benchmarks);
- **aligned**: whitespace-aligned (pandas' ``to_string``/repr, a perf_report): the columns end where
  their header's words end, learnt from the first rows (:class:`AlignedTableStream`);
- **split**: cells two spaces or more apart under a header naming a unit (``kernel (us)   TFLOPS``);
- **csv**: comma-separated, a header of names (hipBLASLt's ``[0]:transA,...,us``, Tensile's client).
"""

from __future__ import annotations

import bisect
import csv
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# ----- whitespace-aligned tables (pandas' to_string and repr, Triton's perf_report) ------------------

_WORD = re.compile(r"\S+")
_ELLIPSIS = re.compile(r"\.{2,}")


def is_ellipsis(text: str) -> bool:
    """pandas' ``...`` (an elided column) or ``..`` (elided rows); pastes sometimes show ``......``."""
    return bool(_ELLIPSIS.fullmatch(text))


@dataclass(frozen=True)
class AlignedColumns:
    """Where the columns of a whitespace-aligned (pandas-printed) table end.

    pandas right-aligns every cell and its header, so a column ends where its header's last word
    ends; a header word under which no cell ends is part of a longer name (``hipmm bpreshuffle us``).
    Columns may be one space apart (``to_string(index=False)``), so splitting on runs of spaces fails.
    """

    names: list[str]
    edges: list[int]  # the end offset (exclusive) of each column
    first_start: int  # cells ending before this are the DataFrame index
    wrapped: bool  # the header ended in ``\\``: pandas wrapped a wide frame into blocks


def aligned_columns(header: str, sample_rows: Iterable[str]) -> AlignedColumns | None:
    """Find the columns from the header and some rows under it; None when the header is blank."""
    words = list(_WORD.finditer(header))
    wrapped = bool(words) and words[-1].group() == "\\"
    if wrapped:
        words.pop()
    if not words:
        return None
    word_ends = {w.end() for w in words}
    edges_hit = {m.end() for row in sample_rows for m in _WORD.finditer(row)} & word_ends
    edges_hit.add(words[-1].end())
    names, edges, first = [], [], 0
    for i, word in enumerate(words):
        if word.end() in edges_hit:
            names.append(header[words[first].start() : word.end()])
            edges.append(word.end())
            first = i + 1
    return AlignedColumns(names, edges, words[0].start(), wrapped)


def split_aligned_row(columns: AlignedColumns, text: str) -> list[str] | None:
    """The cells of one row (``""`` where a cell is blank), or None when ``text`` is not a row:
    a row's every cell ends exactly at its column's edge, and at least half the cells are filled."""
    edges = columns.edges
    groups: list[list[str]] = [[] for _ in edges]
    last_end = [0] * len(edges)
    leading = True
    for token in _WORD.finditer(text):
        if leading and token.end() < columns.first_start:
            continue  # the DataFrame index
        leading = False
        column = bisect.bisect_left(edges, token.end())
        if column >= len(edges):
            return None
        groups[column].append(token.group())
        last_end[column] = token.end()
    filled = [i for i, group in enumerate(groups) if group]
    if any(last_end[i] != edges[i] for i in filled) or 2 * len(filled) < len(edges):
        return None
    return [" ".join(group) for group in groups]


_PANDAS_FOOTER = re.compile(r"^\[\d+ rows x \d+ columns\]")
TextLine = tuple[int, str]  # (lineno, text)
TableRow = tuple[int, list[str]]  # (lineno, cells)


class AlignedTableStream:
    """A pandas-printed table read as its lines stream past.

    The column edges need a few rows (see :func:`aligned_columns`), so the first ``sample_rows``
    lines wait in a buffer. :meth:`push` hands back the rows it can read; once the table has
    ended (``done``) it also hands back the lines that were not rows, in order, for the caller to
    read as ordinary lines. A header that headed no row is handed back too.
    """

    def __init__(self, header_line: int, header: str, sample_rows: int = 64) -> None:
        self.header_line = header_line
        self.header = header
        self.sample_rows = max(1, sample_rows)
        self.layout: AlignedColumns | None = None
        self.rows_read = 0
        self.done = False
        self._sampled: list[TextLine] = []
        self._edges_fixed = False

    def push(self, lineno: int, text: str) -> tuple[list[TableRow], list[TextLine]]:
        if self.done:
            return [], [(lineno, text)]
        if not text.strip() or text[0] in "[|":  # pandas prints neither inside a table
            rows, rest = self._read_sampled()
            if not self.done and _PANDAS_FOOTER.match(text):
                return rows, self._finish([])  # the ``[N rows x M columns]`` footer is the table's
            return rows, self._finish(rest + [(lineno, text)])
        if not self._edges_fixed:
            self._sampled.append((lineno, text))
            return self._read_sampled() if len(self._sampled) >= self.sample_rows else ([], [])
        cells = split_aligned_row(self.layout, text) if self.layout else None
        if cells is None:
            return [], self._finish([(lineno, text)])
        self.rows_read += 1
        return [(lineno, cells)], []

    def close(self) -> tuple[list[TableRow], list[TextLine]]:
        """End the table here (the output ended, or a line that cannot be in a table came)."""
        if self.done:
            return [], []
        rows, rest = self._read_sampled()
        return rows, self._finish(rest)

    def _read_sampled(self) -> tuple[list[TableRow], list[TextLine]]:
        if not self._edges_fixed:
            self._edges_fixed = True
            self.layout = aligned_columns(self.header, (text for _, text in self._sampled))
        pending, self._sampled = self._sampled, []
        rows: list[TableRow] = []
        for index, (lineno, text) in enumerate(pending):
            cells = split_aligned_row(self.layout, text) if self.layout else None
            if cells is None:
                return rows, self._finish(pending[index:])
            rows.append((lineno, cells))
            self.rows_read += 1
        return rows, []

    def _finish(self, rest: list[TextLine]) -> list[TextLine]:
        if self.done:
            return rest
        self.done = True
        return ([(self.header_line, self.header)] if self.rows_read == 0 else []) + rest


# ----- tables drawn with bars and rules ------------------------------------------------------

BARS = "|│┃║"
_BAR_SPLIT = re.compile(r"[|│┃║]")
_RULE = re.compile(r"^[\s\-=:+|│┃║─━═┄┈┼╋╪╫┬┴├┤┌┐└┘┏┓┗┛┡┩╇╈┠┨┯┷╞╡╤╧╔╗╚╝╠╣╦╩╬╭╮╯╰]*$")
_RULE_STROKE = re.compile(r"[-=─━═]")
_BOTTOM_CORNERS = "└┘┗┛╚╝╰╯"
_DASH_RUN = re.compile(r"-{2,}")
_SPLIT2 = re.compile(r"\s{2,}")
# the word ``err`` in a column name (``ck err``, ``err_ratio``), as columns.py classes an err column
ERR_NAME = re.compile(r"(?:^|[\s_:|│┃║(])err(?:$|[\s_(|│┃║)])", re.I)

Row = tuple[int, list[str], list[str]]  # (lineno, column names, cells)


def _may_be_rule(text: str) -> bool:
    return "-" in text or "=" in text or "─" in text or "━" in text or "═" in text


def is_rule(text: str) -> bool:
    """A line of rule strokes only (``|:---|--:|``, ``+===+``, ``├──┼──┤``, ``----  ---``)."""
    return bool(_RULE.match(text)) and bool(_RULE_STROKE.search(text))


def bar_cells(text: str) -> list[str] | None:
    """``| a | b |`` / ``│ a │ b │`` / ``a | b`` -> ``["a", "b"]``; None when the line has no bar.
    An outer bar's empty side is dropped (a row cut short without its closing bar still splits)."""
    stripped = text.strip()
    if "│" in stripped or "┃" in stripped or "║" in stripped:
        parts = _BAR_SPLIT.split(stripped)
    else:
        parts = stripped.split("|")
    if len(parts) < 2:
        return None
    cells = [cell.strip() for cell in parts]
    if stripped[0] in BARS:
        cells = cells[1:]
    if stripped[-1] in BARS and len(stripped) > 1:
        cells = cells[:-1]
    return cells if len(cells) >= 2 else None


@dataclass
class _Simple:
    """A header over a rule of dashes: per column (tabulate ``simple``: the runs give the columns'
    spans), or one long run (cells two spaces or more apart)."""

    spans: list[tuple[int, int]]


HEADER_ROWS_CAP = 3  # bar rows above a rule that may head its table together


@dataclass
class RuledTables:
    """The state of the ruled table the lines are in. ``feed`` reads a line; it hands the rows it
    read to ``on_row(lineno, names, cells)`` and says whether the line was the table's.
    ``simple_headers(text)``: whether a line of names two spaces apart may head a table ruled by
    dashes (the caller knows which names a table of interest has)."""

    on_row: Callable[[int, list[str], list[str]], None]
    on_problem: Callable[[str], None]
    simple_headers: Callable[[str], bool] = lambda text: bool(ERR_NAME.search(text))
    headers: list[tuple[int, list[str]]] = field(default_factory=list)  # bar rows that may head a table
    candidate: tuple[int, str] | None = None  # a line that may head a simple table
    names: list[str] | None = None  # the open table's columns
    header_rows: list[list[str]] = field(default_factory=list)  # its header's bar rows, above its rule
    header_line: int = 0
    simple: _Simple | None = None
    rows: int = 0

    def is_open(self) -> bool:
        """The next line matters whatever it holds."""
        return self.names is not None or bool(self.headers) or self.candidate is not None

    def end(self) -> None:
        self._unread_header()
        self.headers, self.candidate, self.names, self.simple = [], None, None, None

    def feed(self, lineno: int, text: str) -> bool:
        if self.names is not None:
            if self._table_line(lineno, text):
                return True
            self.names = self.simple = None
        cells = bar_cells(text)
        rule = is_rule(text)
        if self.headers:
            if rule:  # ``|---|``, ``+===+``, ``├──┼──┤``, ``---|---`` under bar rows: a table
                self._open(self.headers[0][0], [names for _, names in self.headers])
                self.headers = []
                return True
            if cells is not None and len(self.headers) < HEADER_ROWS_CAP:
                self.headers.append((lineno, cells))  # a header on two lines, or rows of a table without a rule
                return True
            self._unread_header()
            self.headers = []
        if self.candidate is not None:
            (candidate_line, candidate), self.candidate = self.candidate, None
            spans = [m.span() for m in _DASH_RUN.finditer(text)] if rule and cells is None else []
            if len(spans) >= 2:
                names = _simple_names(candidate, spans)
                self._open(candidate_line, [names])
                self.names, self.simple = names, _Simple(spans)
                return True
            if len(spans) == 1 and spans[0][1] - spans[0][0] >= 0.6 * len(candidate.rstrip()):
                names = _SPLIT2.split(candidate.strip())
                self._open(candidate_line, [names])
                self.names, self.simple = names, _Simple([])
                return True
        if cells is not None and not rule:
            self.headers = [(lineno, cells)]
            return True
        if not rule and self.simple_headers(text) and len(_SPLIT2.split(text.strip())) >= 2:
            self.candidate = (lineno, text)
        return False

    def _open(self, header_line: int, header_rows: list[list[str]]) -> None:
        self.header_rows, self.header_line, self.rows = header_rows, header_line, 0
        self.names = header_rows[-1] if len(header_rows) == 1 else None
        if self.names is None:  # decided by the first row: the rows that name as many columns as it has
            self.names = []

    def _names_for(self, n: int) -> list[str] | None:
        """The column names of a row of ``n`` cells under a header of several bar rows: the rows joined
        by column where all have ``n`` cells, else the last one that has."""
        fitting = [row for row in self.header_rows if len(row) == n]
        if not fitting:
            return None
        if len(fitting) == len(self.header_rows):
            return [" ".join(part for part in parts if part) for parts in zip(*fitting)]
        return fitting[-1]

    def _table_line(self, lineno: int, text: str) -> bool:
        names = self.names
        assert names is not None
        cells: list[str] | None
        if self.simple is not None:
            if not text.strip() or is_rule(text):
                return False
            cells = _SPLIT2.split(text.strip())
            if len(cells) != len(names):
                if not self.simple.spans:
                    return False
                cells = _by_spans(text, self.simple.spans)
                if cells is None:
                    return False
        else:
            if _may_be_rule(text) and is_rule(text):  # a grid's or box's rule between rows, or the bottom one
                if any(corner in text for corner in _BOTTOM_CORNERS):
                    self.names = None
                return True
            cells = bar_cells(text)
            if cells is None:
                return False
            if not names:
                fitted = self._names_for(len(cells))
                if fitted is not None:
                    self.names = names = fitted
            if len(cells) != len(names):  # a row cut short (a truncated output) or a cell holding a bar
                shown = len(names) or max(len(row) for row in self.header_rows)
                self.on_problem(f"line {lineno}: table row has {len(cells)} cells, header has {shown}; row skipped")
                return True
        self.rows += 1
        self.on_row(lineno, names, cells)
        return True

    def _unread_header(self) -> None:
        """Bar rows naming an ``err`` column that no rule followed: a table the readers cannot read."""
        for line, names in self.headers[:1]:
            if any(ERR_NAME.search(name) for name in names):
                self.on_problem(f"line {line}: a table with an err column could not be read (no rule under its header)")


def _simple_names(header: str, spans: list[tuple[int, int]]) -> list[str]:
    """The header's words under each dash run (tabulate pads a name to its column's width)."""
    names = []
    for i, (start, end) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(header)
        names.append(header[start if i else 0 : max(end, stop)].strip())
    return names


def _by_spans(text: str, spans: list[tuple[int, int]]) -> list[str] | None:
    cells = []
    for i, (start, _end) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(text)
        piece = text[start if i else 0 : stop]
        if text[start - 1 : start].strip() if start else False:
            return None  # a word runs across the column's left edge
        cells.append(piece.strip())
    return cells


# ----- cells two spaces apart, comma-separated cells ------------------------------------------------

_SPLIT = re.compile(r"\s{2,}")
_NAMES_SPLIT = re.compile(r"[ \t]{2,}")  # a header's names: two ASCII spaces apart (no printer uses others)
_CSV_PREFIX = re.compile(r"^\s*\[\d+\]:\s*")  # hipBLASLt's ``[0]:`` before its header and rows


def split_row(text: str, n: int) -> list[str] | None:
    """The ``n`` cells of a row two spaces or more apart (else one space apart), or None."""
    cells = _SPLIT.split(text.strip())
    if len(cells) == n:
        return cells
    cells = text.split()
    return cells if len(cells) == n else None


def split_names(text: str) -> list[str]:
    return _NAMES_SPLIT.split(text.strip(" \t"))


def csv_cells(text: str) -> list[str] | None:
    """The cells of a comma-separated line (a ``[0]:`` prefix dropped; a quoted cell may hold commas:
    Tensile's ``"(3072,1024,1,16384)"``), or None with fewer than three. A trailing comma ends the
    line, no empty cell after it."""
    body = _CSV_PREFIX.sub("", text, count=1).strip()
    if body.count(",") < 2:
        return None
    cells = [cell.strip() for cell in next(csv.reader([body]))] if '"' in body else [c.strip() for c in body.split(",")]
    if cells and cells[-1] == "" and body.endswith(","):
        cells.pop()
    return cells
