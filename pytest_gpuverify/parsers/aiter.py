"""Parser for the output of aiter ``op_tests/test_*.py`` scripts.

One pass over the lines, as a small state machine. It reads: ``[checkAllclose ...]`` verdicts and
the ``-->max abs delta`` lines after them, legacy one-line ``[perf] ... avg: X us`` results, ruled
tables (markdown, grid, box-drawing, tabulate simple: ruled.py), and pandas-printed tables that follow
a title line (``... summary:``, any ``name:``). The op_tests exit 0 after a failed check, so the
printed words are the only evidence of a wrong result; an error line, a traceback or a ``failed``
no reader understood (alarms.py) makes the output prove nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pytest_gpuverify.records.artifact import Correctness, PerfRow
from pytest_gpuverify.parsers.aiter_tables import ERR_TOLERANCE, SummaryTables
from pytest_gpuverify.parsers.lines import NUMBER, AlignedTableStream, LineReader, read_number, strip_ansi, strip_ci_prefix
from pytest_gpuverify.parsers.dtypes import DtypeReader
from pytest_gpuverify.parsers.metrics import MetricsObserver
from pytest_gpuverify.parsers.perfstats import place
from pytest_gpuverify.parsers.columns import Table
from pytest_gpuverify.parsers.ruled import ERR_NAME as _ERR_COLUMN, RuledTables
from pytest_gpuverify.parsers.prefilter import drive
from pytest_gpuverify.parsers.printout import Printout
from pytest_gpuverify.parsers.result import CappedRecorder, CheckLine, ParseContext, ParsedOutput
from pytest_gpuverify.parsers.shape_checks import PrintedChecks
from pytest_gpuverify.parsers.triggers import AITER

CHECK_LINE_CAP = 10_000  # every check is counted; only the first are kept one by one
SAMPLE_ROWS = 64  # rows read before a whitespace table's column edges are fixed
LABEL_CAP = 200

_LEVELS = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
# AITER_LOG_MORE=1 prints this header alone and the message on the next line.
_LOG_MORE_HEADER = re.compile(rf"^\[aiter (?:{_LEVELS})\] \d{{4}}-\d\d-\d\d[ T]")
_LOGGER_PREFIX = re.compile(rf"^\[aiter(?: (?:{_LEVELS}))?\] ?")
# Some log viewers drop the ESC byte and leave ``[32m`` around the verdict word; that still reads.
_CHECK = re.compile(
    r"\[checkAllclose\s+(?:(?:atol=(?P<atol>[^\s\]]+)|rtol=(?P<rtol>[^\s\]]+))\s+){1,2}(?:\[[\d;]*m)?"
    r"(?P<word>(?i:passed|warning|failed|catastrophic))[~!]?(?:\[[\d;]*m)?\s*\]"
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
_TITLE = re.compile(r"^[^\s|\[].{0,200}:$")  # a title over a pandas table (``gemm summary:``, ``results:``)
_MEASURED_KEY = re.compile(r"uplift|speedup|ratio|gain|tflops|tb/s|gb/s|bandwidth|(^|_)(bw|us|ms|err)$", re.I)
_NAN_WORD = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)
_ORPHAN_ELIDED_ROW = re.compile(r"^\d+\s{2,}\S.*\s\.{3,}\s")  # pandas rows with ``...`` and no header seen

class _AiterParser(SummaryTables, CappedRecorder):
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
        self.title: Optional[tuple[int, str]] = None  # the last ``... summary:`` title line read, and its text
        self.summary_titled = True  # the pending title says ``summary`` (else: any title)
        self.ruled = RuledTables(self.ruled_row, self.problem)  # markdown, grid, box, simple tables
        self.ruled_table: Optional[tuple[int, Table]] = None
        self.checked_line = 0  # the last line a check was read on
        self.ws_stream: Optional[AlignedTableStream] = None  # a pandas-printed table after ``summary:``
        self.ws_table: Optional[Table] = None
        self.ws_perf = True
        self.orphan_rows_noted = False
        self.metrics = MetricsObserver(self.fail)  # cosine_sim, max_abs_error, logits_diff, snr_db
        # per-shape check lines, NaN in a printed result
        self.printed = PrintedChecks(self.fail, context.thresholds)
        self.printout = Printout(self, context)  # verdict lines, assert_close blocks, alarms: every kind's
        declared = context.thresholds.err_ratio_max
        self.err_tolerance = declared if declared is not None else ERR_TOLERANCE
        self.err_origin = " (the declared err_ratio_max)" if declared is not None else ""
        self.err_max: Optional[float] = None
        self.dtypes = DtypeReader(self.out.dtypes_seen)  # the output dtype of the shapes checked

    def wants_every_line(self) -> bool:
        """A table or tensor dump is open: the next line matters whatever it holds."""
        return (self.in_tensor_dump or self.summary_pending is not None or self.ws_stream is not None
                or self.ruled.is_open() or self.printed.wants_every_line())

    # ----- dispatch --------------------------------------------------------------------------
    def feed(self, lineno: int, raw: str) -> None:
        text = strip_ansi(raw) if "\x1b" in raw else raw
        if text[:1].isdigit() and "Z " in text[:40]:
            text = strip_ci_prefix(text)
        if text.startswith("[aiter"):
            # A logger record starts here, and a table never spans two records: only a record's
            # first line carries the prefix, so the tables it may print come without one.
            if self.summary_pending is not None or self.ruled.is_open() or self.ws_stream:
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
        if ":" in text or "=" in text or "etween" in text:  # ``name: value``, ``name=value``, ``... between a and b is X``
            read = self.metrics.observe(lineno, text)
            if read is not None:
                self.printed.measured(lineno, text, read)
        if self.wants_every_line() or _may_matter(text):  # else: the line holds nothing dispatch reads
            self.dispatch(lineno, text)
        self.printout.feed(lineno, text, checked=lineno in (self.checked_line, self.printed.checked_line))

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
            # any title may head a pandas table; one without ``summary`` only a header that looks like one
            looks = self.summary_titled or text[:1] == " " or "  " in stripped
            if stripped and text[0] not in "[|" and stripped != "Empty DataFrame" and looks:
                self.ws_stream = AlignedTableStream(lineno, text.rstrip(), SAMPLE_ROWS)
                self.ws_perf = self.summary_titled or self.any_title_perf
                return
        if self.ws_stream is not None:
            self.take_ws_rows(*self.ws_stream.push(lineno, text))
            return
        if self.ruled.feed(lineno, text):
            return
        if ":" in text:  # the summary title and ``avg:`` both need one
            stripped = text.rstrip()
            if stripped.endswith(":") and _TITLE.match(stripped):
                self.summary_pending = lineno
                self.title = (lineno, stripped[:-1].strip())
                self.summary_titled = "summary" in stripped.lower()
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
            read = 0
            for match in _CHECK.finditer(text):
                self.check(lineno, text[start : match.start()], match)
                start = match.end()
                read += 1
            if read < text.count("[checkAllclose"):
                self.problem(f"line {lineno}: a [checkAllclose line that could not be read: {text.strip()[:200]}")
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
        word = match["word"].lower()
        label = msg.strip()[:LABEL_CAP]
        atol, rtol = _float_or_none(match["atol"]), _float_or_none(match["rtol"])
        if len(self.out.checks) < CHECK_LINE_CAP:
            self.out.checks.append(CheckLine(line=lineno, status=word, atol=atol, rtol=rtol, label=label))
        self.checks_seen += 1
        self.checked_line = lineno
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
                metrics = {k: self.figure(lineno, k, match[g], f" ('{who}')")
                           for k, g in (("TFLOPS", "tflops"), ("TB/s", "tbs")) if match[g]}
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
        pairs = [(m["key"], " ".join(m["value"].split())) for m in _SHAPE_PAIR.finditer(described)]
        # a measured figure (``speedup: 2.0x``, ``TFLOPS: 5``) is no part of what identifies the case
        measured = {k: v for k, v in pairs if _MEASURED_KEY.search(k)}
        shape = ", ".join(f"{k}={v}" for k, v in pairs if k not in measured)[:500]
        for match, who, metrics, stat in sorted(timings, key=lambda t: t[0].start()):
            kind, value = read_number(match["us"])
            if kind in ("nan", "inf"):
                self.nan_count += 1
                self.fail(f"line {lineno}: {kind} in '{who}' timing")
            if uplift and who.lower() != "torch":
                metrics["uplift_pct"] = float(uplift["pct"])
            for key, text in measured.items():
                metrics.setdefault(key, _float_or_none(text.rstrip("x%")))
            row = PerfRow(shape=shape, name=who, stat=stat, metrics=metrics, source_line=lineno)
            place(row, stat, value)
            self.add_perf(row)
        if checked:
            self.shape_keys.add(hash(shape or msg.strip()))
            self.dtypes.pairs(lineno, ((m["key"], m["value"]) for m in _SHAPE_PAIR.finditer(described)))

    # ----- result ----------------------------------------------------------------------------
    def finish(self, reader: LineReader) -> ParsedOutput:
        self.end_tables()
        self.printout.close()
        self.close_call_block()
        out = self.out
        self.close(reader)
        err_cells = sum(self.err_counts.values())
        if self.checks_seen:  # check lines are the checks; err cells repeat them, except failures
            passed, warning = self.counts["passed"], self.counts["warning"]
        else:
            passed, warning = self.err_counts["passed"], self.err_counts["warning"]
        printed = self.printed  # per-shape check lines and declared words: one check per shape
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
        self.printout.settle(out.correctness)
        return out


def _has_bar(text: str) -> bool:
    """A ruled table's row (ruled.py); its rules matter only once a table is open."""
    return "|" in text or "│" in text or "┃" in text or "║" in text



def _may_matter(text: str) -> bool:
    """Whether :meth:`_AiterParser.dispatch` would do anything with ``text`` when no table is open:
    a check, a max delta, an assertion, a ruled table's row, a ``...:`` title, a ``calling`` block, a
    ``[perf]``/``avg:`` timing, a digit-led (pandas) row or a header naming an ``err`` column (a
    tabulate ``simple`` table's). Single characters are tested first."""
    c0 = text[:1]
    return (
        c0 == "|" or c0.isdigit() or _has_bar(text) or text.startswith("calling ") or "AssertionError" in text
        or ("[" in text and ("[checkAllclose" in text or "[perf]" in text))
        or (">" in text and "-->max" in text)
        or (":" in text and ("avg:" in text or text.rstrip().endswith(":")))
        or ("rr" in text.lower() and _ERR_COLUMN.search(text) is not None)
    )


def _float_or_none(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    kind, value = read_number(text)
    return value if kind == "num" else None




def aiter_table_rows(path: Path, cap: int = 100_000) -> list[tuple[int, dict[str, str]]]:
    """Every row of every table the aiter parser reads (ruled or pandas-printed, under any title), as
    ``(lineno, {column: cell})``: for readers of a table's other columns (a ``dtype`` column, say).
    The first ``cap`` rows are kept."""
    rows: list[tuple[int, dict[str, str]]] = []

    class _RowKeeper(_AiterParser):
        def table_row(self, table, lineno: int, cells: list[str], perf: bool = True) -> None:
            if len(rows) < cap:
                rows.append((lineno, {col.name: cell for col, cell in zip(table.columns, cells)}))
            super().table_row(table, lineno, cells, perf)

    drive(_RowKeeper(), path)
    return rows
