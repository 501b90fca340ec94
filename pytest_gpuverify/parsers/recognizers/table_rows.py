"""One row of a printed table, read by its columns' classes (:mod:`..reading.columns`): its checks
(a status or correctness cell that says pass or fail, an aiter ``err`` against the tolerance, an
error figure against the row's tolerance column) and its perf rows (a time or a group of them in
µs with its provider's throughputs, a figure of no time its own row, ratios in every row's
``metrics``). :mod:`.tables` finds the tables and hands each row here.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

from pytest_gpuverify.parsers.dtypes import DtypeReader
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.perfstats import FIELD_OF, quantities_of, to_us
from pytest_gpuverify.parsers.reading.columns import ERROR_FIELDS, MEASURE_FIELDS, Column, Table, named_in_us
from pytest_gpuverify.parsers.reading.lines import read_number
from pytest_gpuverify.parsers.reading.statements import status_of_cell
from pytest_gpuverify.parsers.recognizers.table_names import name_repeats, settings_above
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import PerfRow

ERR_TOLERANCE = 0.05  # aiter's default tol_err_ratio: an ``err`` above it is a failed check
_SIDE_SUFFIX = re.compile(r"^(?P<name>.*\S)\s*\((?P<side>[ABab]|base|head)\)$")
_EMPTY_WORDS = {"", "-", "--", "none", "skip", "skipped", "missing", "n/a", "na", "nil"}
_RUN_STATUS = {"success", "succeeded", "done", "completed", "complete", "finished", "ran", "running"}
_BROKEN_STATUS = {"error", "errored", "crash", "crashed", "timeout", "timed out", "oom", "exception", "aborted"}


def cell_number(text: str) -> tuple[str, float | None]:
    """A printed cell: thousands separators and a trailing ``x``/``%`` go; ``-``/``skip`` are empty."""
    t = text.strip().replace(",", "")
    if t.lower() in _EMPTY_WORDS:
        return "empty", None
    if t[-1:] in ("x", "%") and len(t) > 1:
        t = t[:-1]
    return read_number(t)


@lru_cache(maxsize=1024)
def _side_of(name: str) -> tuple[str, str | None]:
    """``Triton (A)`` -> ``("Triton", "A")``: a column named for an A/B side (asked once per name)."""
    match = _SIDE_SUFFIX.match(name)
    return (match["name"], match["side"]) if match else (name, None)


class RowReader:
    """The rows of every table of one output: what they checked and measured, into ``ev``."""

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        declared = context.thresholds.err_ratio_max
        self.ev = ev
        self.err_tolerance = declared if declared is not None else ERR_TOLERANCE
        self.err_origin = " (the declared err_ratio_max)" if declared is not None else ""
        self.dtypes = DtypeReader(ev.out.dtypes_seen)
        self.checked_rows: set[int] = set()  # rows of a check of the tables' own (a shape each)
        self.rows_read = 0
        self.tables: list[Table] = []  # every table that gave a row, in order (table_names.py names repeats)
        self.config: tuple[int, str] | None = None  # the last line of settings read outside a table
        self.last_row_line = 0

    def finish(self) -> None:
        """Counted last: aiter ``err`` cells where no check line weighs them, a shape per checked row;
        a table repeating another's keys told apart (table_names.py)."""
        name_repeats(self.tables)
        ev = self.ev
        if not ev.err_cells_counted:  # no aiter check lines to weigh them against: each cell a check
            err = ev.err_cells
            inside = ev.inside_tests
            ev.count(
                passed=err["passed"],
                warning=err["warning"],
                failed=err["failed"],
                shapes=0 if inside else len(ev.cases),
                decisive=not inside,
            )
        if self.checked_rows and not ev.inside_tests:
            ev.count(shapes=len(self.checked_rows))

    def read(self, table: Table, lineno: int, cells: list[str], side: str | None = None) -> None:
        """One row of ``table``: its checks and perf rows into the evidence; ``side``: the line's
        A/B prefix, where no column names one."""
        table.rows += 1
        self.rows_read += 1
        ev = self.ev
        if table.rows == 1:
            table.config = settings_above(table, self.config, self.last_row_line)
            self.tables.append(table)
        self.last_row_line = lineno
        if table.rows == 1:  # reported once the header proved to head a table
            where = f"line {table.header_line}: summary table"
            if any(c.kind == "elided" for c in table.columns):
                ev.problem(f"{where} has elided columns; rerun with COLUMNS=10000")
            if table.wrapped:
                ev.problem(f"{where} is wrapped; only its first block is read; rerun with COLUMNS=10000")
        self.dtypes.table_row(lineno, table.columns, cells)
        plan = table.plan()
        shape = ", ".join([f"{name}={cells[i]}" for i, name in plan.shape if cells[i]])
        where = f" ({shape})" if shape else ""
        self._checks(table, lineno, cells, shape, where)
        side = next((cells[i] for i in plan.sides if cells[i]), None) or side
        ratios = {}
        for i, name in plan.ratios:
            kind, value = cell_number(cells[i])
            if kind == "num":
                ratios[name] = value
        runs = next((int(v) for i in plan.runs if (v := cell_number(cells[i])[1]) is not None and v.is_integer()), None)
        times: dict[int, float | None] = {}
        metrics_of: dict[int, dict[str, float | None]] = {}
        for i, col, metric_cells in plan.times:
            printed, value = self._figure(lineno, col, cells[i], where, plan.scale[i])
            if not printed:
                continue
            times[i] = value
            figures: dict[str, float | None] = {}
            for j, name in metric_cells:
                printed, figure = self._figure(lineno, table.columns[j], cells[j], where, None)
                if printed:
                    figures[name] = figure
            metrics_of[i] = figures
        title = table.title
        for group in plan.groups:
            present = [m for m in group.members if m[0] in times]
            if not present:
                continue
            metrics: dict[str, float | None] = {}
            for index, _, _ in present:
                metrics.update(metrics_of.get(index) or {})
            metrics.update(ratios)
            if len(present) == 1:
                index, name, stat = present[0]
                if plan.scale[index] is not None:
                    name = named_in_us(name)
                field = FIELD_OF.get(stat)
                if field is None:
                    metrics[f"{stat}_us"] = times[index]
                    quantity = {}
                else:
                    quantity = {field: times[index]}
                name, named = _side_of(name)
                row = PerfRow(
                    shape=shape,
                    name=name,
                    stat=stat,
                    runs=runs,
                    metrics=metrics,
                    source_line=lineno,
                    table=title,
                    side=named or side,
                    **quantity,
                )
            else:
                [q] = quantities_of([group], times)
                metrics.update(q.spread)
                scaled = any(plan.scale[m[0]] is not None for m in present)
                name, named = _side_of(named_in_us(q.name) if scaled else q.name)
                row = PerfRow(
                    shape=shape,
                    name=name,
                    us_median=q.us_median,
                    stat=q.stat,
                    min_us=q.min_us,
                    max_us=q.max_us,
                    runs=runs,
                    metrics=metrics,
                    source_line=lineno,
                    table=title,
                    side=named or side,
                )
            if self.ev.add_perf(row):
                table.perf.append(row)
        for i, name in plan.figures:
            printed, value = self._figure(lineno, table.columns[i], cells[i], where, None)
            if not printed:
                continue
            shown, named = _side_of(name)
            row = PerfRow(
                shape=shape,
                name=shown,
                metrics={name: value, **ratios},
                source_line=lineno,
                table=title,
                side=named or side,
            )
            if self.ev.add_perf(row):
                table.perf.append(row)

    def _figure(
        self, lineno: int, col: Column, cell: str, where: str, scale: Decimal | None
    ) -> tuple[bool, float | None]:
        """(printed, value): a time (in µs) or another figure of a cell; not printed where the cell is
        empty or unreadable. NaN/inf is a failure and a negative time no time: both keep their row,
        with a null value."""
        kind, value = cell_number(cell)
        if kind == "empty":
            return False, None
        if kind == "bad":
            self.ev.problem(f"line {lineno}: unreadable value {cell!r} in column '{col.name}'")
            return False, None
        if kind != "num":
            self.ev.nan_count += 1
            self.ev.fail(f"line {lineno}: {kind} in column '{col.name}'{where}")
            return True, None
        if col.kind == "time" and value is not None and value < 0:
            self.ev.note(f"line {lineno}: a negative time in column '{col.name}'{where} is no time; kept as null")
            return True, None
        if scale is not None:
            return True, to_us(cell.replace(",", ""), scale)
        return True, value

    # ----- a row's checks -----------------------------------------------------------------------
    def _checks(self, table: Table, lineno: int, cells: list[str], shape: str, where: str) -> None:
        plan = table.plan()
        ev = self.ev
        tolerance = next((v for i in plan.tolerance if (v := cell_number(cells[i])[1]) is not None), None)
        row_key = hash((table.title, shape or f"line {lineno}"))
        for i, col in plan.errors:
            self._error(lineno, col, cells[i], tolerance, where, row_key)
        for i, col in plan.checks:
            cell = cells[i]
            if col.kind == "err":
                self._err(lineno, col, cell, where, shape)
                continue
            verdict = self._verdict(col, cell)
            if verdict is None:
                if cell.strip(" .").lower() in _BROKEN_STATUS:
                    ev.problem(f"line {lineno}: column '{col.name}' says {cell.strip()}{where}: no result")
                continue
            self._check(lineno, verdict, f"line {lineno}: column '{col.name}' says {cell.strip()}{where}", row_key)

    def _verdict(self, col: Column, cell: str) -> bool | None:
        if col.kind == "wrong":
            kind, value = cell_number(cell)
            return (value == 0) if kind == "num" and value is not None and value.is_integer() else None
        said = status_of_cell(cell)
        if said is not None or not cell.strip():
            return said
        word = cell.strip().lower()
        if col.kind == "correct" and word in _RUN_STATUS:
            return True
        if col.kind in ("correct", "accuracy"):
            kind, value = cell_number(cell)
            if kind == "num" and value in (0.0, 1.0):
                return value == 1.0
        return None

    def _check(self, lineno: int, passed: bool, reason: str, row_key: int) -> None:
        ev = self.ev
        ev.mark(lineno, failed=not passed)
        inside = ev.inside_tests
        ev.count(passed=int(passed), failed=int(not passed), decisive=not inside)
        self.checked_rows.add(row_key)
        if not passed:
            ev.fail(reason)

    def _err(self, lineno: int, col: Column, cell: str, where: str, shape: str) -> None:
        """aiter's mismatch ratio: within the tolerance a passed (0) or warned (> 0) check."""
        kind, value = read_number(cell)
        ev = self.ev
        if kind == "empty":
            return  # not checked
        if kind == "bad":
            ev.problem(f"line {lineno}: unreadable value {cell!r} in column '{col.name}'")
            return
        ev.cases.add(hash(shape))
        if kind != "num":
            ev.nan_count += 1
            ev.fail(f"line {lineno}: {kind} in column '{col.name}'{where}")
            ev.err_cells["failed"] += 1
            ev.mark(lineno, failed=True)
            return
        ev.widest("err_ratio", value)
        if value is not None and value > self.err_tolerance:
            ev.err_cells["failed"] += 1
            ev.mark(lineno, failed=True)
            ev.fail(
                f"line {lineno}: err {cell} > {self.err_tolerance:g}{self.err_origin} in column '{col.name}'{where}"
            )
        else:
            ev.err_cells["passed" if value == 0 else "warning"] += 1
            ev.mark(lineno, failed=False)

    def _error(self, lineno: int, col: Column, cell: str, tolerance: float | None, where: str, row_key: int) -> None:
        """An error figure or a measure: kept (the worst); a check against the row's tolerance."""
        kind, value = cell_number(cell)
        if kind == "empty" or kind == "bad":
            return
        fields = MEASURE_FIELDS if col.kind == "measure" else ERROR_FIELDS
        field = next((f for f, rx in fields if rx.search(col.name)), None)
        if kind != "num":
            self.ev.nan_count += 1
            self._check(lineno, False, f"line {lineno}: {kind} in column '{col.name}'{where}", row_key)
            return
        if field is not None:
            self.ev.metrics.record(field, value)  # type: ignore[arg-type]
        if col.kind == "error" and tolerance is not None and value is not None:
            passed = abs(value) <= tolerance
            reason = f"line {lineno}: {col.name} {cell.strip()} is above the tolerance {tolerance:g}{where}"
            self._check(lineno, passed, reason, row_key)
