"""Parser for the output of aiter ``op_tests/test_*.py`` scripts (research notes, section 1).

One pass over the lines, as a small state machine. It reads: ``[checkAllclose ...]`` verdicts and
the ``-->max abs delta`` lines after them, legacy one-line ``[perf] ... avg: X us`` results, markdown
summary tables, and pandas-printed summary tables that follow a ``... summary:`` line. The op_tests
exit 0 after a failed check, so the printed words are the only evidence of a wrong result.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from ..artifact import Correctness, PerfRow
from .lines import EMPTY_CELLS, NUMBER, AlignedTableStream, LineReader, TableRow, TextLine, is_ellipsis
from .lines import is_markdown_separator, markdown_cells, read_number, strip_ansi, strip_ci_prefix
from .columns import Table, classify_columns
from .dtypes import DtypeReader
from .metrics import MetricsObserver
from .prefilter import drive
from .result import CappedRecorder, CheckLine, ParseContext, ParsedOutput
from .shape_checks import PrintedChecks
from .triggers import AITER

CHECK_LINE_CAP = 10_000  # every check is counted; only the first are kept one by one
ERR_TOLERANCE = 0.05  # aiter's default tol_err_ratio: an ``err`` above it is a failed check
SAMPLE_ROWS = 64  # rows read before a whitespace table's column edges are fixed
LABEL_CAP = 200

_LEVELS = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
# AITER_LOG_MORE=1 prints this header alone and the message on the next line.
_LOG_MORE_HEADER = re.compile(rf"^\[aiter (?:{_LEVELS})\] \d{{4}}-\d\d-\d\d[ T]")
_LOGGER_PREFIX = re.compile(rf"^\[aiter(?: (?:{_LEVELS}))?\] ?")
# Some log viewers drop the ESC byte and leave ``[32m`` around the verdict word; that still reads.
_CHECK = re.compile(
    r"\[checkAllclose\s+atol=(?P<atol>[^\s\]]+)\s+rtol=(?P<rtol>[^\s\]]+)\s+(?:\[[\d;]*m)?"
    r"(?P<word>passed|warning|failed|catastrophic)[~!]?(?:\[[\d;]*m)?\s*\]"
)
_MAX_DELTA = re.compile(r"-->max (?:abs )?delta:\s*(?P<value>[^\s,]+)")
_CATASTROPHIC_ASSERT = re.compile(r"AssertionError:.*catastrophic error")
_CALLING = re.compile(r"^calling \w+\(")
# ``torch avg: 16.19 us`` / ``asm_avg: 148.84 us``; ``us/iter`` is a LOG_MORE extra, not a result.
_AVG_TIMING = re.compile(rf"(?:^|(?<=[\s,\]]))(?P<who>\w+?)[ _]avg:\s*(?P<us>{NUMBER})\s*us(?![\w/])")
# ``a8w8 asm:    50.77 us`` / ``ck_moe_2stages:  234.56 us,   654.00 tflops``
_NAMED_TIMING = re.compile(
    rf"(?:^|(?<=\[perf\])|(?<=,))\s*(?P<who>[A-Za-z][\w.\-]*(?: [A-Za-z][\w.\-]*)*):\s*(?P<us>{NUMBER})\s*us(?![\w/])"
    rf"(?:[\s,.]*(?P<tflops>{NUMBER})\s*tflops)?(?:[\s,.]*(?P<tbs>{NUMBER})\s*TB/s)?",
    re.IGNORECASE,
)
_UPLIFT = re.compile(r"uplift:\s*(?P<pct>[-+]?\d+(?:\.\d+)?)%")
_SHAPE_PAIR = re.compile(r"(?P<key>[A-Za-z_][\w.]*)\s*[=:]\s*(?P<value>\([^()]*\)|\[[^\[\]]*\]|[^\s,()\[\]]+)")
_NAN_WORD = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)
_ORPHAN_ELIDED_ROW = re.compile(r"^\d+\s{2,}\S.*\s\.{3,}\s")  # pandas rows with ``...`` and no header seen

class _AiterParser(CappedRecorder):
    triggers = AITER  # the lines it reads (triggers.py), for prefilter.drive

    def __init__(self, context: Optional[ParseContext] = None) -> None:
        context = context or ParseContext()
        self.out = ParsedOutput(parser="aiter")
        self.counts = {"passed": 0, "warning": 0, "failed": 0, "catastrophic": 0}
        self.err_counts = {"passed": 0, "warning": 0, "failed": 0}
        self.checks_seen = 0
        self.nan_count = 0
        self.atol: Optional[float] = None
        self.rtol: Optional[float] = None
        self.shape_keys: set[int] = set()  # hashes: distinct checked shapes, without keeping the text
        self.call_blocks_checked = 0
        self.call_block_open = False
        self.call_block_has_check = False
        self.in_tensor_dump = False
        self.summary_pending: Optional[int] = None
        self.md_header: Optional[tuple[int, list[str]]] = None
        self.md_table: Optional[Table] = None
        self.ws_stream: Optional[AlignedTableStream] = None  # a pandas-printed table after ``summary:``
        self.ws_table: Optional[Table] = None
        self.orphan_rows_noted = False
        self.metrics = MetricsObserver(self.fail)  # cosine_sim, max_abs_error, logits_diff, snr_db
        # seed 004's per-shape lines, declared pass/fail words, NaN in a printed result
        self.printed = PrintedChecks(self.fail, context.thresholds, context.pass_pattern, context.fail_pattern)
        declared = context.thresholds.err_ratio_max
        self.err_tolerance = declared if declared is not None else ERR_TOLERANCE
        self.err_origin = " (the declared err_ratio_max)" if declared is not None else ""
        self.err_max: Optional[float] = None
        self.dtypes = DtypeReader(self.out.dtypes_seen)  # the output dtype of the shapes checked

    def wants_every_line(self) -> bool:
        """A table or tensor dump is open: the next line matters whatever it holds."""
        return (self.in_tensor_dump or self.summary_pending is not None or self.ws_stream is not None
                or self.md_header is not None or self.md_table is not None or self.printed.wants_every_line())

    # ----- dispatch --------------------------------------------------------------------------
    def feed(self, lineno: int, raw: str) -> None:
        text = strip_ansi(raw) if "\x1b" in raw else raw
        if text[:1].isdigit() and "Z " in text[:40]:
            text = strip_ci_prefix(text)
        if text.startswith("[aiter"):
            # A logger record starts here, and a table never spans two records: only a record's
            # first line carries the prefix, so the tables it may print come without one.
            if self.summary_pending is not None or self.md_header or self.md_table or self.ws_stream:
                self.end_tables()
            self.in_tensor_dump = False
            if text.startswith("[aiter] "):
                text = text[8:]
            elif _LOG_MORE_HEADER.match(text):
                return  # the message is on the next line
            else:
                text = _LOGGER_PREFIX.sub("", text, count=1)
        if not (self.in_tensor_dump and text[:1] in (" ", "\t")):  # a failed check's a/b/delta dump is read below
            self.printed.feed(lineno, text)
        if ":" in text or "=" in text:  # every measure the observer reads is ``name: value`` or ``name=value``
            read = self.metrics.observe(lineno, text)
            if read is not None:
                self.printed.measured(lineno, text, read)
        if (self.in_tensor_dump or self.summary_pending is not None or self.ws_stream is not None
                or self.md_header is not None or self.md_table is not None):
            self.dispatch(lineno, text)
        elif _may_matter(text):  # no table or dump open: most lines hold nothing dispatch reads
            self.dispatch(lineno, text)

    def dispatch(self, lineno: int, text: str) -> None:
        # single-character tests (memchr) first: most lines hold none of the verdicts
        if ("[" in text and "[checkAllclose" in text) or (">" in text and "-->max" in text) or "AssertionError" in text:
            # a verdict is read wherever it is printed, even glued onto a table line
            self.in_tensor_dump = False
            self.end_tables()
            self.plain_line(lineno, text)
            return
        if self.in_tensor_dump:
            if text[:1] in (" ", "\t"):
                # the a/b/delta tensors under a failed check print NaN where the kernel made one
                self.nan_count += len(_NAN_WORD.findall(text))
                return
            self.in_tensor_dump = False
        if self.summary_pending is not None:
            self.summary_pending = None
            stripped = text.strip()
            if stripped and text[0] not in "[|" and stripped != "Empty DataFrame":
                self.ws_stream = AlignedTableStream(lineno, text.rstrip(), SAMPLE_ROWS)
                return
        if self.ws_stream is not None:
            self.take_ws_rows(*self.ws_stream.push(lineno, text))
            return
        if self.md_header is not None:
            header_line, names = self.md_header
            self.md_header = None
            if is_markdown_separator(text):
                self.md_table = Table(header_line, classify_columns(names))
                return
        if self.md_table is not None:
            if text.startswith("|"):
                self.md_row(self.md_table, lineno, text)
                return
            self.md_table = None
        if text.startswith("|"):
            self.md_header = (lineno, markdown_cells(text))
            return
        if ":" in text:  # the summary title and ``avg:`` both need one
            stripped = text.rstrip()
            if stripped.endswith(":") and "summary" in stripped.lower():
                self.summary_pending = lineno
                return
            self.plain_line(lineno, text, verdicts=False)
        elif text.startswith("calling ") or ("[" in text and "[perf]" in text) or text[:1].isdigit():
            self.plain_line(lineno, text, verdicts=False)

    def plain_line(self, lineno: int, text: str, verdicts: bool = True) -> None:
        """``verdicts=False``: the caller knows the line holds no check, max delta or assertion."""
        if text.startswith("calling ") and _CALLING.match(text):
            self.close_call_block()
            self.call_block_open = True
            self.dtypes.calling(lineno, text)
        start = 0
        if verdicts and "[checkAllclose" in text:
            for match in _CHECK.finditer(text):
                self.check(lineno, text[start : match.start()], match)
                start = match.end()
        if start == 0 and ("[perf]" in text or "avg:" in text):
            self.legacy_perf(lineno, text, checked=False)
        if verdicts and "-->max" in text:
            self.max_delta(lineno, text)
        if verdicts and "AssertionError" in text and _CATASTROPHIC_ASSERT.search(text):
            self.fail(f"line {lineno}: {text.strip()[:300]}")
        if text[:1].isdigit() and not self.orphan_rows_noted and _ORPHAN_ELIDED_ROW.match(text):
            self.orphan_rows_noted = True
            self.problem(
                f"line {lineno}: summary table rows with elided columns and no header; rerun with COLUMNS=10000"
            )

    # ----- checkAllclose ---------------------------------------------------------------------
    def check(self, lineno: int, msg: str, match: re.Match[str]) -> None:
        word = match["word"]
        label = msg.strip()[:LABEL_CAP]
        atol, rtol = _float_or_none(match["atol"]), _float_or_none(match["rtol"])
        if len(self.out.checks) < CHECK_LINE_CAP:
            self.out.checks.append(CheckLine(line=lineno, status=word, atol=atol, rtol=rtol, label=label))
        self.checks_seen += 1
        self.counts[word] += 1
        if atol is not None and (self.atol is None or atol > self.atol):
            self.atol = atol
        if rtol is not None and (self.rtol is None or rtol > self.rtol):
            self.rtol = rtol
        if self.call_block_open:
            self.call_block_has_check = True
        if word in ("failed", "catastrophic"):
            reason = f"line {lineno}: checkAllclose {word}! (atol={match['atol']} rtol={match['rtol']})"
            self.fail(f"{reason} {label}" if label else reason)
            self.in_tensor_dump = True
        if "[perf]" in msg or "avg:" in msg or " us" in msg:
            self.legacy_perf(lineno, msg, checked=True)

    def max_delta(self, lineno: int, text: str) -> None:
        match = _MAX_DELTA.search(text)
        if match is None:
            return
        kind, _ = read_number(match["value"])
        if kind in ("nan", "inf"):
            self.nan_count += 1
            self.fail(f"line {lineno}: max abs delta is {match['value']}")

    def close_call_block(self) -> None:
        if self.call_block_open and self.call_block_has_check:
            self.call_blocks_checked += 1
        self.call_block_open = self.call_block_has_check = False

    # ----- legacy one-line perf --------------------------------------------------------------
    def legacy_perf(self, lineno: int, msg: str, checked: bool) -> None:
        timings: list[tuple[re.Match[str], str, dict[str, Optional[float]], Optional[str]]] = []
        for match in _AVG_TIMING.finditer(msg):
            timings.append((match, match["who"], {}, "mean"))
        if checked or "[perf]" in msg:
            for match in _NAMED_TIMING.finditer(msg):
                who = match["who"].strip()
                if who.lower().endswith("avg"):
                    continue
                metrics = {k: _float_or_none(match[g]) for k, g in (("TFLOPS", "tflops"), ("TB/s", "tbs")) if match[g]}
                timings.append((match, who, metrics, None))
        if not timings:
            return
        uplift = _UPLIFT.search(msg)
        spans = sorted([m.span() for m, *_ in timings] + ([uplift.span()] if uplift else []))
        rest, cursor = [], 0
        for begin, end in spans:
            rest.append(msg[cursor:begin])
            cursor = max(cursor, end)
        rest.append(msg[cursor:])
        described = " ".join(rest)
        if "[perf]" in described:
            described = described.split("[perf]", 1)[1]  # what precedes is the check's label (``a,b:``)
        shape = ", ".join(f"{m['key']}={' '.join(m['value'].split())}" for m in _SHAPE_PAIR.finditer(described))[:500]
        for match, who, metrics, stat in sorted(timings, key=lambda t: t[0].start()):
            kind, value = read_number(match["us"])
            if kind in ("nan", "inf"):
                self.nan_count += 1
                self.fail(f"line {lineno}: {kind} in '{who}' timing")
            if uplift and who.lower() != "torch":
                metrics["uplift_pct"] = float(uplift["pct"])
            row = PerfRow(shape=shape, name=who, us_median=value, stat=stat, metrics=metrics, source_line=lineno)
            self.add_perf(row)
        if checked:
            self.shape_keys.add(hash(shape or msg.strip()))
            self.dtypes.pairs(lineno, ((m["key"], m["value"]) for m in _SHAPE_PAIR.finditer(described)))

    # ----- tables ----------------------------------------------------------------------------
    def md_row(self, table: Table, lineno: int, text: str) -> None:
        cells = markdown_cells(text)
        if len(cells) == len(table.columns):
            self.table_row(table, lineno, cells)
        else:  # a row cut short (a truncated output) or a cell holding a ``|``
            found, expected = len(cells), len(table.columns)
            self.problem(f"line {lineno}: table row has {found} cells, header has {expected}; row skipped")

    def take_ws_rows(self, rows: list[TableRow], handed_back: list[TextLine]) -> None:
        stream = self.ws_stream
        assert stream is not None
        for lineno, cells in rows:
            if self.ws_table is None and stream.layout is not None:
                self.ws_table = Table(stream.header_line, classify_columns(stream.layout.names), stream.layout.wrapped)
            table = self.ws_table
            assert table is not None
            if not all(is_ellipsis(c) for c in cells if c):
                self.table_row(table, lineno, cells)
            elif not table.elided_rows_seen:
                table.elided_rows_seen = True
                self.problem(f"line {lineno}: summary table has elided rows; only the printed rows are read")
        if stream.done:
            self.ws_stream = self.ws_table = None
            for lineno, text in handed_back:  # not the table's: they get their ordinary reading
                self.dispatch(lineno, text)

    def end_tables(self) -> None:
        self.summary_pending = self.md_header = self.md_table = None
        while self.ws_stream is not None:  # a handed-back line may open another table; each is shorter
            self.take_ws_rows(*self.ws_stream.close())

    def table_row(self, table: Table, lineno: int, cells: list[str]) -> None:
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
        for i, col, metric_cells in plan.values:
            text = cells[i]
            kind, value = read_number(text)
            if kind == "empty":
                continue  # a time: a provider skipped for this shape or arch; an err: not checked
            if kind == "bad":
                self.problem(f"line {lineno}: unreadable value {text!r} in column '{col.name}'")
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
            metrics = {name: read_number(cells[j])[1] for j, name in metric_cells if cells[j] not in EMPTY_CELLS}
            metrics.update(ratios)
            self.add_perf(PerfRow(shape=shape, name=col.name, us_median=value, metrics=metrics, source_line=lineno))
        if checked:
            self.shape_keys.add(hash(shape))

    # ----- result ----------------------------------------------------------------------------
    def finish(self, reader: LineReader) -> ParsedOutput:
        self.end_tables()
        self.close_call_block()
        out = self.out
        self.close(reader)
        err_cells = sum(self.err_counts.values())
        if self.checks_seen:  # check lines are the checks; err cells repeat them, except failures
            passed, warning = self.counts["passed"], self.counts["warning"]
        else:
            passed, warning = self.err_counts["passed"], self.err_counts["warning"]
        printed = self.printed  # seed 004's per-shape lines and declared words: one check per shape
        failed = self.counts["failed"] + self.counts["catastrophic"] + self.err_counts["failed"] + printed.shapes_failed
        passed += printed.shapes_passed
        if self.shape_keys:
            shapes = len(self.shape_keys)
        elif self.checks_seen:
            shapes = self.call_blocks_checked or self.checks_seen
        else:
            shapes = 0
        shapes += printed.shapes
        if self.failures_seen:
            verdict: Optional[bool] = False
        elif self.checks_seen or err_cells or printed.shapes:
            verdict = True
        else:
            verdict = None
        out.correctness = Correctness(
            passed=verdict, atol=self.atol, rtol=self.rtol, nan_count=self.nan_count + printed.nan_count,
            shapes_checked=shapes, checks_passed=passed, checks_warning=warning, checks_failed=failed,
            err_ratio=self.err_max,
        )
        self.metrics.apply(out.correctness)
        return out


def _may_matter(text: str) -> bool:
    """Whether :meth:`_AiterParser.dispatch` would do anything with ``text`` when no table is open:
    a check, a max delta, an assertion, a markdown row, a ``...:`` title, a ``calling`` block, a
    ``[perf]``/``avg:`` timing or a digit-led (pandas) row. Single characters are tested first."""
    c0 = text[:1]
    return (
        c0 == "|" or c0.isdigit() or text.startswith("calling ") or "AssertionError" in text
        or ("[" in text and ("[checkAllclose" in text or "[perf]" in text))
        or (">" in text and "-->max" in text)
        or (":" in text and ("avg:" in text or text.rstrip().endswith(":")))
    )


def _float_or_none(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    kind, value = read_number(text)
    return value if kind == "num" else None


def parse_aiter_output(path: Path, context: Optional[ParseContext] = None) -> ParsedOutput:
    """Read an aiter op_test's saved stdout+stderr; never raises (see ``problems`` instead)."""
    return drive(_AiterParser(context), path)
