"""The aiter parser's tables: pandas-printed summaries after a title, and ruled tables (markdown,
grid, box-drawing, tabulate simple; :mod:`.ruled`). An ``err`` cell is a check (above
:data:`ERR_TOLERANCE` it fails); a time cell is a perf row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from pytest_gpuverify.records.artifact import PerfRow
from pytest_gpuverify.parsers.columns import Table, classify_columns
from pytest_gpuverify.parsers.perfstats import FIELD_OF, quantities_of, to_us
from pytest_gpuverify.parsers.lines import EMPTY_CELLS, TableRow, TextLine, is_ellipsis, read_number

if TYPE_CHECKING:
    from pytest_gpuverify.parsers.dtypes import DtypeReader
    from pytest_gpuverify.parsers.lines import AlignedTableStream
    from pytest_gpuverify.parsers.ruled import RuledTables

ERR_TOLERANCE = 0.05  # aiter's default tol_err_ratio: an ``err`` above it is a failed check


class SummaryTables:
    """Mixed into the aiter parser (which records: ``fail``, ``problem``, ``add_perf``, counts)."""

    any_title_perf = True  # a pandas table under a title without ``summary`` gives perf rows too

    if TYPE_CHECKING:  # what the parser (aiter.py) that mixes this in provides; set in its __init__
        ws_stream: Optional[AlignedTableStream]
        ws_table: Optional[Table]
        ws_perf: bool
        ruled: RuledTables
        ruled_table: Optional[tuple[int, Table]]
        summary_pending: Optional[int]
        title: Optional[tuple[int, str]]
        err_max: Optional[float]
        err_tolerance: float
        err_origin: str
        err_counts: dict[str, int]
        nan_count: int
        shape_keys: set[int]
        dtypes: DtypeReader

        def dispatch(self, lineno: int, text: str) -> None: ...
        def fail(self, reason: str) -> None: ...
        def problem(self, reason: str) -> None: ...
        def add_perf(self, row: PerfRow) -> None: ...

    def take_ws_rows(self, rows: list[TableRow], handed_back: list[TextLine]) -> None:
        stream = self.ws_stream
        assert stream is not None
        for lineno, cells in rows:
            if self.ws_table is None and stream.layout is not None:
                self.ws_table = Table(stream.header_line, classify_columns(stream.layout.names), stream.layout.wrapped,
                                      title=self.title_over(stream.header_line))
            table = self.ws_table
            assert table is not None
            if not self.ws_perf and not any(c.kind == "err" for c in table.columns):
                continue  # another reader's perf table, with nothing to check in it
            if not all(is_ellipsis(c) for c in cells if c):
                self.table_row(table, lineno, cells, perf=self.ws_perf)
            elif not table.elided_rows_seen:
                table.elided_rows_seen = True
                self.problem(f"line {lineno}: summary table has elided rows; only the printed rows are read")
        if stream.done:
            self.ws_stream = self.ws_table = None
            for lineno, text in handed_back:  # not the table's: they get their ordinary reading
                self.dispatch(lineno, text)

    def end_tables(self) -> None:
        self.summary_pending = self.ruled_table = None
        self.ruled.end()
        while self.ws_stream is not None:  # a handed-back line may open another table; each is shorter
            self.take_ws_rows(*self.ws_stream.close())

    def ruled_row(self, lineno: int, names: list[str], cells: list[str]) -> None:
        header_line = self.ruled.header_line
        if self.ruled_table is None or self.ruled_table[0] != header_line:
            self.ruled_table = (header_line, Table(header_line, classify_columns(names), title=self.title_over(header_line)))
        self.table_row(self.ruled_table[1], lineno, cells)

    def title_over(self, header_line: int) -> Optional[str]:
        """The title printed on the line just above a table's header (``[aiter] gemm summary (markdown):``)."""
        return self.title[1] if self.title is not None and self.title[0] == header_line - 1 else None

    def table_row(self, table: Table, lineno: int, cells: list[str], perf: bool = True) -> None:
        """One row: its err cells are checks, its time cells perf rows (unless ``perf`` is off: another
        reader makes this table's perf rows)."""
        table.rows += 1
        if table.rows == 1:  # reported once the header proved to head a table
            where = f"line {table.header_line}: summary table"
            if any(c.kind == "elided" for c in table.columns):
                self.problem(f"{where} has elided columns; rerun with COLUMNS=10000")
            if table.wrapped:
                self.problem(f"{where} is wrapped; only its first block is read; rerun with COLUMNS=10000")
        self.dtypes.table_row(lineno, table.columns, cells)
        plan = table.plan()
        shape = ", ".join([f"{name}={cells[i]}" for i, name in plan.shape if cells[i]])
        where = f" ({shape})" if shape else ""
        ratios = {name: read_number(cells[i])[1] for i, name in plan.ratios if cells[i] not in EMPTY_CELLS}
        checked = False
        times: dict[int, Optional[float]] = {}
        metrics_of: dict[int, dict[str, Optional[float]]] = {}
        for i, col, metric_cells in plan.values:
            text = cells[i]
            kind, value = read_number(text)
            if kind == "empty":
                continue  # a time: a provider skipped for this shape or arch; an err: not checked
            if kind == "bad":
                self.problem(f"line {lineno}: unreadable value {text!r} in column '{col.name}'")
                continue
            if col.kind != "err" and not perf:
                continue
            if kind != "num":
                self.nan_count += 1
                self.fail(f"line {lineno}: {kind} in column '{col.name}'{where}")
            if col.kind == "err":
                checked = True
                if value is not None and (self.err_max is None or value > self.err_max):
                    self.err_max = value
                if kind != "num" or (value is not None and value > self.err_tolerance):
                    self.err_counts["failed"] += 1
                    if kind == "num":
                        self.fail(f"line {lineno}: err {text} > {self.err_tolerance:g}{self.err_origin} "
                                  f"in column '{col.name}'{where}")
                else:
                    self.err_counts["passed" if value == 0 else "warning"] += 1
                continue
            scale = plan.scale[i]
            if kind == "num" and scale is not None:
                value = to_us(text, scale)
            times[i] = value
            if metric_cells:
                metrics_of[i] = {name: self.figure(lineno, name, cells[j], where) for j, name in metric_cells
                                 if cells[j] not in EMPTY_CELLS}
        if times:
            self.perf_rows(plan, lineno, cells, shape, times, metrics_of, ratios, table.title)
        if checked:
            self.shape_keys.add(hash(shape))

    def perf_rows(self, plan, lineno: int, cells: list[str], shape: str, times: dict[int, Optional[float]],
                  metrics_of: dict[int, dict[str, Optional[float]]], ratios: dict[str, Optional[float]],
                  title: Optional[str] = None) -> None:
        """One perf row per measured quantity (perfstats.py): a group's columns' metrics go to its row."""
        runs = next((int(v) for i in plan.runs if (v := read_number(cells[i])[1]) is not None and v.is_integer()), None)
        for group in plan.groups:
            members = group.members
            if len(members) == 1:  # the common case (``ck us``, ``triton us``): no grouping to do
                index, name, stat = members[0]
                if index not in times:
                    continue
                metrics = metrics_of.get(index) or {}  # a fresh dict per row
                if ratios:
                    metrics.update(ratios)
                field = FIELD_OF.get(stat)
                if field == "us_median":
                    self.add_perf(PerfRow(shape=shape, name=name, us_median=times[index], stat=stat, runs=runs,
                                          metrics=metrics, source_line=lineno, table=title))
                    continue
                if field is None:
                    metrics[f"{stat}_us"] = times[index]
                row = {field: times[index]} if field else {}
                self.add_perf(PerfRow(shape=shape, name=name, stat=stat, runs=runs, metrics=metrics,
                                      source_line=lineno, table=title, **row))
                continue
            quantities = quantities_of([group], times)
            if not quantities:
                continue
            [q] = quantities
            metrics = {}
            for index, _, _ in members:
                metrics.update(metrics_of.get(index, ()))
            metrics.update(q.spread)
            metrics.update(ratios)
            self.add_perf(PerfRow(shape=shape, name=q.name, us_median=q.us_median, stat=q.stat, min_us=q.min_us,
                                  max_us=q.max_us, runs=runs, metrics=metrics, source_line=lineno, table=title))

    def figure(self, lineno: int, name: str, text: str, where: str) -> Optional[float]:
        """A throughput cell: a NaN or inf there is a measured figure gone wrong (README, Verdicts,
        "NaN where a number was due"): counted, and a failure, as in a time cell."""
        kind, value = read_number(text)
        if kind in ("nan", "inf"):
            self.nan_count += 1
            self.fail(f"line {lineno}: {kind} in column '{name}'{where}")
        return value

