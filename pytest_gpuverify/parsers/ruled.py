"""Tables drawn with bars and rules, read as their lines stream past: markdown and tabulate's
``pipe``/``github`` (``|---|``), ``grid`` (``+---+``, ``+===+``), box-drawing tables (``│ ─ ┼``,
rich's ``┃ ━ ╇``), the same without outer bars or indented, and tabulate's ``simple`` (a header
over a rule of dashes, columns apart by two spaces).

:class:`RuledTables` hands back each row as cells under the header's names; :func:`table_rows`
reads a whole file that way, as ``{column: cell}`` dicts, for any reader that wants a table's
columns (a ``dtype`` column, say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

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


def bar_cells(text: str) -> Optional[list[str]]:
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
    """A tabulate ``simple`` table: the dash runs of its rule give the columns' spans."""

    spans: list[tuple[int, int]]


@dataclass
class RuledTables:
    """The state of the ruled table the lines are in. ``feed`` reads a line; it hands the rows it
    read to ``on_row(lineno, names, cells)`` and says whether the line was the table's."""

    on_row: Callable[[int, list[str], list[str]], None]
    on_problem: Callable[[str], None]
    simple_headers: Callable[[str], bool] = lambda text: bool(ERR_NAME.search(text))
    header: Optional[tuple[int, list[str]]] = None  # a bar row that may head a table
    candidate: Optional[tuple[int, str]] = None  # a line that may head a simple table
    names: Optional[list[str]] = None  # the open table's columns
    header_line: int = 0
    simple: Optional[_Simple] = None
    rows: int = 0

    def is_open(self) -> bool:
        """The next line matters whatever it holds."""
        return self.names is not None or self.header is not None or self.candidate is not None

    def end(self) -> None:
        self._unread_header()
        self.header = self.candidate = self.names = self.simple = None

    def feed(self, lineno: int, text: str) -> bool:
        if self.names is not None:
            if self._table_line(lineno, text):
                return True
            self.names = self.simple = None
        cells = bar_cells(text)
        rule = is_rule(text)
        if self.header is not None:
            header_line, names = self.header
            self.header = None
            if rule:  # ``|---|``, ``+===+``, ``├──┼──┤``, ``---|---`` under a bar row: a table
                self._open(header_line, names)
                return True
            self._unread_header((header_line, names))
        if self.candidate is not None:
            (candidate_line, candidate), self.candidate = self.candidate, None
            spans = [m.span() for m in _DASH_RUN.finditer(text)] if rule and cells is None else []
            if len(spans) >= 2:
                self._open(candidate_line, _simple_names(candidate, spans))
                self.simple = _Simple(spans)
                return True
        if cells is not None and not rule:
            self.header = (lineno, cells)
            return True
        if not rule and self.simple_headers(text) and len(_SPLIT2.split(text.strip())) >= 2:
            self.candidate = (lineno, text)
        return False

    def _open(self, header_line: int, names: list[str]) -> None:
        self.names, self.header_line, self.rows = names, header_line, 0

    def _table_line(self, lineno: int, text: str) -> bool:
        names = self.names
        assert names is not None
        cells: Optional[list[str]]
        if self.simple is not None:
            if not text.strip() or is_rule(text):
                return False
            cells = _SPLIT2.split(text.strip())
            if len(cells) != len(names):
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
            if len(cells) != len(names):  # a row cut short (a truncated output) or a cell holding a bar
                self.on_problem(f"line {lineno}: table row has {len(cells)} cells, header has {len(names)}; "
                                "row skipped")
                return True
        self.rows += 1
        self.on_row(lineno, names, cells)
        return True

    def _unread_header(self, header: Optional[tuple[int, list[str]]] = None) -> None:
        """A bar row naming an ``err`` column that no rule followed: a table the readers cannot read."""
        header = header or self.header
        if header is not None and any(ERR_NAME.search(name) for name in header[1]):
            self.on_problem(f"line {header[0]}: a table with an err column could not be read (no rule under "
                            "its header)")


def _simple_names(header: str, spans: list[tuple[int, int]]) -> list[str]:
    """The header's words under each dash run (tabulate pads a name to its column's width)."""
    names = []
    for i, (start, end) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(header)
        names.append(header[start if i else 0 : max(end, stop)].strip())
    return names


def _by_spans(text: str, spans: list[tuple[int, int]]) -> Optional[list[str]]:
    cells = []
    for i, (start, _end) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(text)
        piece = text[start if i else 0 : stop]
        if text[start - 1 : start].strip() if start else False:
            return None  # a word runs across the column's left edge
        cells.append(piece.strip())
    return cells


def table_rows(path: Union[str, Path]) -> Iterator[tuple[int, dict[str, str]]]:
    """Every row of every ruled table in the file at ``path``: ``(lineno, {column: cell})``.
    (A column named twice keeps its first cell.)"""
    from pytest_gpuverify.parsers.lines import LineReader, strip_ansi

    found: list[tuple[int, dict[str, str]]] = []

    def keep(lineno: int, names: list[str], cells: list[str]) -> None:
        row: dict[str, str] = {}
        for name, cell in zip(names, cells):
            row.setdefault(name, cell)
        found.append((lineno, row))

    tables = RuledTables(keep, lambda _: None, simple_headers=lambda text: True)
    for lineno, text in LineReader(path):
        tables.feed(lineno, strip_ansi(text))
        yield from found
        found.clear()
