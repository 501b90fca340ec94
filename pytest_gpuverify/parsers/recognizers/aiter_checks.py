"""aiter's own lines (``op_tests/test_*.py`` scripts, and harnesses built on aiter's helpers).

It reads ``[checkAllclose ...]`` verdicts and the ``-->max abs delta`` lines after them (a failed
check's a/b/delta dump is owned here: its ``nan`` is the kernel's), ``AssertionError: ...
catastrophic error``, ``calling test_x(...)`` blocks (a block with a check is a checked shape), and
legacy one-line ``[perf] ... avg: X us`` results. The op_tests exit 0 after a failed check, so the
printed words are the only evidence of a wrong result. Its tables are tables (tables.py): a row's
``err`` cell is the mismatch ratio of the same call that printed a check line, so the two are one
check (summed up here: check lines are the checks, err cells repeat them except their failures).
"""

from __future__ import annotations

import re

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH
from pytest_gpuverify.parsers.dtypes import DtypeReader
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.perfstats import place
from pytest_gpuverify.parsers.reading.fold import TriggerSpec, hs_key_value, key_value
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.lines import NUMBER, read_number
from pytest_gpuverify.parsers.registry import STRUCTURE, RecognizerBase
from pytest_gpuverify.parsers.result import CheckLine, ParseContext
from pytest_gpuverify.records.artifact import PerfRow

CHECK_LINE_CAP = 10_000  # every check is counted; only the first are kept one by one
LABEL_CAP = 200

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
_MEASURED_KEY = re.compile(r"uplift|speedup|ratio|gain|tflops|tb/s|gb/s|bandwidth|(^|_)(bw|us|ms|err)$", re.I)
_NAN_WORD = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)

# With no dump open it does something with a line only when it holds a ``[checkAllclose``, a
# ``-->max``, an ``AssertionError`` (key_value finds ``assertionerror:``), a timing (``who avg: X us``,
# ``name: X us``: key_value); or the line starts (after the reader's prefixes) with ``calling ``.
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (key_value(ascii_only), b"checkallclose", b"-->max", b"assertionerror"),
    line_start=(b"calling ",),
    hs=lambda k: (*hs_key_value(k), b"checkallclose", b"-->max", b"assertionerror"),
    hs_line_start=lambda k: (k.words(b"calling "),),
    name="aiter-checks",
)


class AiterChecks(RecognizerBase):
    name = "aiter-checks"
    stage = STRUCTURE
    kinds = frozenset((AITER_OP_TEST, BENCH))
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.counts = {"passed": 0, "warning": 0, "failed": 0, "catastrophic": 0}
        self.checks_seen = 0
        self.call_blocks_checked = 0
        self.call_block_open = False
        self.call_block_has_check = False
        self.in_tensor_dump = False
        self.dtypes = DtypeReader(ev.out.dtypes_seen)

    def wants_every_line(self) -> bool:
        """A failed check's dump is open: its next line matters whatever it holds."""
        return self.in_tensor_dump

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        rows = len(self.ev.out.perf)
        self._feed(line)
        if len(self.ev.out.perf) > rows:
            line.figures_read = True

    def _feed(self, line: Line) -> None:
        text = line.text
        if line.record_start:
            self.in_tensor_dump = False  # a logger record starts here: the dump has ended
        if self.in_tensor_dump:
            if text[:1] in (" ", "\t"):
                # the a/b/delta tensors under a failed check print NaN where the kernel made one
                self.ev.nan_count += len(_NAN_WORD.findall(text))
                line.owned = True
                return
            self.in_tensor_dump = False
        if ("[" in text and "[checkAllclose" in text) or (">" in text and "-->max" in text) or "AssertionError" in text:
            self.verdicts(line)
        elif text.startswith("calling ") or ("[" in text and "[perf]" in text) or "avg:" in text:
            self.plain_line(line.lineno, text)

    def verdicts(self, line: Line) -> None:
        """A check, a max delta, an assertion: read wherever printed, even glued onto a table line."""
        lineno, text = line.lineno, line.text
        line.ends_tables = True
        start = 0
        if "[checkAllclose" in text:
            read = 0
            for match in _CHECK.finditer(text):
                self.check(lineno, text[start : match.start()], match)
                start = match.end()
                read += 1
            if read < text.count("[checkAllclose"):
                self.ev.problem(f"line {lineno}: a [checkAllclose line that could not be read: {text.strip()[:200]}")
        if start == 0 and ("[perf]" in text or "avg:" in text):
            self.legacy_perf(lineno, text, checked=False)
        if "-->max" in text:
            self.max_delta(lineno, text)
        if "AssertionError" in text and _CATASTROPHIC_ASSERT.search(text):
            self.ev.mark(lineno, failed=True)
            self.ev.fail(f"line {lineno}: {text.strip()[:300]}")

    def plain_line(self, lineno: int, text: str) -> None:
        if text.startswith("calling ") and _CALLING.match(text):
            self.close_call_block()
            self.call_block_open = True
            self.dtypes.calling(lineno, text)
        if "[perf]" in text or "avg:" in text:
            self.legacy_perf(lineno, text, checked=False)

    # ----- checkAllclose ---------------------------------------------------------------------
    def check(self, lineno: int, msg: str, match: re.Match[str]) -> None:
        word = match["word"].lower()
        label = msg.strip()[:LABEL_CAP]
        atol, rtol = _float_or_none(match["atol"]), _float_or_none(match["rtol"])
        out = self.ev.out
        if len(out.checks) < CHECK_LINE_CAP:
            out.checks.append(CheckLine(line=lineno, status=word, atol=atol, rtol=rtol, label=label))
        self.checks_seen += 1
        self.counts[word] += 1
        self.ev.widest("atol", atol)
        self.ev.widest("rtol", rtol)
        if self.call_block_open:
            self.call_block_has_check = True
        failed = word in ("failed", "catastrophic")
        self.ev.mark(lineno, failed)
        if failed:
            reason = f"line {lineno}: checkAllclose {word}! (atol={match['atol']} rtol={match['rtol']})"
            self.ev.fail(f"{reason} {label}" if label else reason)
            self.in_tensor_dump = True
        if "[perf]" in msg or "avg:" in msg or " us" in msg:
            self.legacy_perf(lineno, msg, checked=True)

    def max_delta(self, lineno: int, text: str) -> None:
        match = _MAX_DELTA.search(text)
        if match is None:
            return
        kind, _ = read_number(match["value"])
        if kind in ("nan", "inf"):
            self.ev.nan_count += 1
            self.ev.mark(lineno, failed=True)
            self.ev.fail(f"line {lineno}: max abs delta is {match['value']}")

    def close_call_block(self) -> None:
        if self.call_block_open and self.call_block_has_check:
            self.call_blocks_checked += 1
        self.call_block_open = self.call_block_has_check = False

    # ----- legacy one-line perf --------------------------------------------------------------
    def legacy_perf(self, lineno: int, msg: str, checked: bool) -> None:
        timings: list[tuple[re.Match[str], str, dict[str, float | None], str | None]] = []
        for match in _AVG_TIMING.finditer(msg):
            timings.append((match, match["who"], {}, "mean"))
        if checked or "[perf]" in msg:
            for match in _NAMED_TIMING.finditer(msg):
                who = match["who"].strip()
                if who.lower().endswith("avg"):
                    continue
                metrics = {
                    k: self.figure(lineno, k, match[g], f" ('{who}')")
                    for k, g in (("TFLOPS", "tflops"), ("TB/s", "tbs"))
                    if match[g]
                }
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
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: {kind} in '{who}' timing")
            if uplift and who.lower() != "torch":
                metrics["uplift_pct"] = float(uplift["pct"])
            for key, text in measured.items():
                metrics.setdefault(key, _float_or_none(text.rstrip("x%")))
            row = PerfRow(shape=shape, name=who, stat=stat, metrics=metrics, source_line=lineno)
            place(row, stat, value)
            self.ev.add_perf(row)
        if checked:
            self.ev.cases.add(hash(shape or msg.strip()))
            self.dtypes.pairs(lineno, ((m["key"], m["value"]) for m in _SHAPE_PAIR.finditer(described)))

    def figure(self, lineno: int, name: str, text: str, where: str) -> float | None:
        """A throughput figure: a NaN or inf there is a measured figure gone wrong (NaN where a
        number was due): counted, and a failure, as in a time."""
        kind, value = read_number(text)
        if kind in ("nan", "inf"):
            self.ev.nan_count += 1
            self.ev.fail(f"line {lineno}: {kind} in column '{name}'{where}")
        return value

    # ----- result ----------------------------------------------------------------------------
    def finish(self) -> None:
        """Check lines are the checks; a table's err cells repeat them, except their failures."""
        self.close_call_block()
        ev = self.ev
        err = ev.err_cells
        ev.err_cells_counted = True
        if self.checks_seen:
            passed, warning = self.counts["passed"], self.counts["warning"]
        else:
            passed, warning = err["passed"], err["warning"]
        failed = self.counts["failed"] + self.counts["catastrophic"] + err["failed"]
        if ev.cases:
            shapes = len(ev.cases)
        elif self.checks_seen:
            shapes = self.call_blocks_checked or self.checks_seen
        else:
            shapes = 0
        ev.count(passed=passed, warning=warning, failed=failed, shapes=shapes)


def _float_or_none(text: str | None) -> float | None:
    if text is None:
        return None
    kind, value = read_number(text)
    return value if kind == "num" else None


RECOGNIZERS = (AiterChecks,)
