"""``torch.utils.benchmark.Compare``'s tables (xformers', flash-attention's and many kernel benchmarks):
a bracketed title, a header of bar-separated columns, ``N threads: ----`` sections, rows of a label
and one time per column, and the unit in a line of its own after the table::

    [------------- attention (attn_bias=<class 'NoneType'>) -------------]
                                            |  xformers  |  flashattn
    1 threads: ------------------------------------------------------
          f16 fwd_gen B=160, M=8096, K=128  |   49828.0  |    88721.0

    Times are in microseconds (us).

Each time is a perf row: its shape the row's label (and the threads where the table has several
sections), its name the column, its table the title, in µs. The rows wait for the unit line; a
table that never prints one keeps its figures under their column's name, no unit assumed.
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.perfstats import TO_US, to_us
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.lines import NUMBER, read_number
from pytest_gpuverify.parsers.registry import FORMATS, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import PerfRow

# ``[---- title ----]``; a long title goes without dashes: ``[ title ]``
_TITLE = re.compile(r"^\s*\[(?:-+\s*(?P<title>.*?)\s*-+| (?P<plain>.+) )\]\s*$")
_THREADS = re.compile(r"^\s*(?P<n>\d+) threads?:\s*-+\s*$")
_UNIT = re.compile(r"^\s*Times are in (?P<word>\w+) \((?P<unit>us|ms|ns|s)\)\.?\s*$")
_VALUE = re.compile(rf"^\s*(?P<v>{NUMBER})")
ROWS_CAP = 10_000  # rows kept waiting for the unit line; the rest are counted in a problem

# the title's ``[---`` or ``[ `` at a line's start (spaces aside), the unit line's ``times are in``
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (b"times are in ",),
    line_start=(rb"[ \x80]*\[[- ]",),
    hs=lambda k: (k.words(b"times are in "),),
    hs_line_start=lambda k: (k.spu + rb"*\[[- ]",),
    name="torch-compare",
)


class TorchCompare(RecognizerBase):
    name = "torch-compare"
    stage = FORMATS
    triggers = TRIGGERS
    examples = (
        "[------------- attention (attn_bias=None) -------------]",
        "[ attention ]",
        "  |  xformers  |  flashattn",
        "1 threads: -----------",
        "  f16 B=160, M=8096  |   49828.0  |    88721.0",
        "Times are in microseconds (us).",
    )

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.title: str | None = None  # an open table's title
        self.names: list[str] | None = None
        self.threads: str | None = None
        self.sections = 0
        self.rows: list[tuple[int, str, str | None, list[tuple[str, str]]]] = []  # (line, label, threads, cells)
        self.dropped = 0

    def wants_every_line(self) -> bool:
        return self.title is not None or bool(self.rows)

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        text = line.text
        title = _TITLE.match(text) if "[" in text else None
        if title is not None:
            self._emit(None)
            self.title, self.names, self.threads, self.sections = title["title"] or title["plain"], None, None, 0
            line.owned = line.figures_read = True
            return
        if self.rows and (unit := _UNIT.match(text)) is not None:
            self._emit(unit["unit"])
            line.owned = True
            return
        if self.title is None:
            return
        if (threads := _THREADS.match(text)) is not None:
            self.threads, self.sections = threads["n"], self.sections + 1
            line.owned = True
            return
        cells = [cell.strip() for cell in text.split("|")] if "|" in text else None  # its first column has no name
        if cells is None:
            if text.strip():
                self.title = None  # the table has ended: its rows wait for the unit line
            return
        if self.names is None:
            self.names = cells
        elif len(cells) == len(self.names) and len(self.rows) < ROWS_CAP:
            self.rows.append((line.lineno, cells[0], self.threads, list(zip(self.names[1:], cells[1:]))))
        elif len(cells) == len(self.names):
            self.dropped += 1
        line.owned = line.figures_read = True

    def close(self) -> None:
        self._emit(None)

    def _emit(self, unit: str | None) -> None:
        """The rows waiting, with the unit the table printed (None: none printed)."""
        scale = TO_US.get(unit) if unit and unit != "us" else None
        for lineno, label, threads, cells in self.rows:
            shape = " ".join(label.split())
            if self.sections > 1 and threads is not None:
                shape = f"{shape}, threads={threads}"
            for column, cell in cells:
                found = _VALUE.match(cell)
                if found is None:
                    continue  # an empty cell: no figure for this column
                kind, value = read_number(found["v"])
                row = PerfRow(shape=shape, name=column, table=self.title, source_line=lineno)
                if kind != "num":
                    self.ev.nan_count += 1
                    self.ev.fail(f"line {lineno}: {kind} in column '{column}' ({shape})")
                    value = None
                if unit is None:
                    row.metrics[column] = value
                else:
                    row.us_median = to_us(found["v"], scale) if scale is not None and value is not None else value
                self.ev.add_perf(row)
        if self.dropped:
            self.ev.problem(f"{self.dropped} more rows of torch benchmark table '{self.title}' not kept")
        self.rows, self.dropped = [], 0


RECOGNIZERS = (TorchCompare,)
