"""An inner pytest run's own frame (FlyDSL ``tests/kernels``, aiter ``op_tests/triton_tests``, any repo's tests).

The JUnit XML report gives every test's outcome exactly; without it, the terminal's summary line
(``3 passed, 1 skipped in 2.1s``) and the ``-rA`` short summary (``FAILED x::y - msg``) are read.
The trap: FlyDSL's conftest turns exit code 5 into 0, and whole modules skip themselves
when ``import aiter`` fails, so a run where no test passed and none failed is a problem
(:data:`RAN_NO_TEST`), never a pass; so is a run that stopped before its first test (a usage error,
a conftest or test module that cannot be imported: exit 4 or 2), whose reason names the first error
line it printed. torch ``assert_close`` blocks are read into the failure reason. A test a retry
plugin ran again (``RERUN``, ``1 rerun``, listed twice in the JUnit report) failed an attempt: it fails.
pytest's own lines (sections, outcomes, the summary, a failed test's traceback) are owned here; every
other line goes on to the other recognizers with where it stands (a failed test's report is
``SETTLED``: that test's failure, counted already; the warnings summary is ``WARNINGS``) and the
test whose section it is in.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pytest_gpuverify.config.targets import PYTEST_KINDS
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import TriggerSpec, hs_key_value, key_value
from pytest_gpuverify.parsers.reading.junit import (  # noqa: F401 (junit_nodeid)
    BLOCK_CAP,
    MESSAGE_CAP,
    RETRIED,
    Counts,
    JunitResult,
    junit_nodeid,
    read_junit,
)
from pytest_gpuverify.parsers.reading.line import FREE, SETTLED, WARNINGS, Line
from pytest_gpuverify.parsers.reading.lines import read_number
from pytest_gpuverify.parsers.reading.measures import NOT_CLOSE, CloseBlock
from pytest_gpuverify.parsers.recognizers.alarms import is_error_line
from pytest_gpuverify.parsers.registry import STRUCTURE, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext

RAN_NO_TEST = "the inner pytest ran no test"  # + f" ({skipped} skipped)"
NO_RESULT = "no pytest result in the output: no JUnit XML and no pytest summary line"
OUTCOME_CAP = 100_000  # node ids remembered from the terminal; counts go on

_SUMMARY = re.compile(r"^=*\s*(?P<body>(?:\d+ [a-z]+, )*\d+ [a-z]+|no tests ran) in [\d.]+s(?: \([\d:.]+\))?\s*=*$")
_COUNT = re.compile(r"(\d+) ([a-z]+)")
_SHORT = re.compile(
    r"^(?P<word>PASSED|FAILED|ERROR|XFAIL|XPASS|RERUN) (?P<id>[^\s\[]+(?:\[.*?\])?)(?: - (?P<msg>.*))?$"
)
_SHORT_SKIP = re.compile(r"^SKIPPED \[(?P<n>\d+)\] ")
_VERBOSE = re.compile(r"^(?P<id>\S+::[^\s\[]+(?:\[.*?\])?) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN)\b")
_WORD = r"(?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN)"
# pytest-xdist's ``-v`` outcome: ``[gw0] [ 25%] FAILED tests/t.py::test_x[1]``
_XDIST = re.compile(rf"^\[gw\d+\] \[\s*\d+%\] {_WORD} (?P<id>\S+)$")
# ``-v``'s progress token, ``FAILED [ 25%]``, alone on a line (a test printed its output first, with
# ``-s``) or ending the line of what the test printed: pytest's own, the test counted by JUnit or the summary
_PROGRESS = re.compile(rf"(?:^|\s){_WORD}\s+\[\s*\d+%\]$")
# ``-v -s``: a test's node id, then what it printed; the outcome word ends it, alone on a line
_VERBOSE_START = re.compile(r"^(?P<id>\S+\.py::\S+) (?P<rest>.*)$")
_BARE = re.compile(rf"^{_WORD}$")
_PROGRESS_AREA = ("", "test session starts")
_SECTION = re.compile(r"^={3,} (?P<title>.+?) ={3,}$")
_PYTEST_SECTIONS = re.compile(
    r"X?FAILURES|ERRORS|X?PASSES|short test summary info|warnings summary|test session starts"
    r"|slowest .*durations|rerun test summary info|tests coverage"
)
_SUBSECTION = re.compile(r"^-{3,} (?:Captured|generated|live log|coverage).* -{3,}$")
_TEST_HEADER = re.compile(r"^_{3,} (?:(?:ERROR|FAILURE) at \w+ of )?(?P<name>.+?) _{3,}$")
_WORDS = {
    "passed": "passed",
    "xpassed": "passed",
    "failed": "failed",
    "error": "errors",
    "errors": "errors",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "deselected": "deselected",
    "rerun": "reruns",
    "reruns": "reruns",
}
_TRACE_SECTIONS = ("FAILURES", "ERRORS")
# ``ImportError while loading conftest '...'.`` / ``ImportError while importing test module '...'.``
_ERROR_WHILE = re.compile(r"\w(?:Error|Exception) while ")
_STOPPED_EARLY = (2, 3, 4)  # pytest's exit codes for a run it stopped before its tests: collection, internal, usage


class PytestTerminal:
    """The pytest terminal output, line by line: summary, short summary, sections, ``E`` lines.

    :meth:`feed` returns the text other readers should see, or None for pytest's own lines and the
    source lines of a traceback (a printed ``cos_sim = 0.99`` there is code, not a result)."""

    def __init__(self) -> None:
        self.section = ""
        self.test: str | None = None  # the test whose section is being read (``test_y[bf16]``)
        self.in_trace = False
        self.summary: tuple[int, Counts] | None = None
        self.outcomes: dict[str, tuple[str, str, int]] = {}  # node id -> (word, message, line)
        self.outcomes_dropped = 0
        self.outcome_sources: set[str] = set()  # where outcomes were read: "short summary", "-v lines"
        self.reruns: dict[str, int] = {}  # node id -> the line a retry plugin's RERUN was printed on
        self.short_skipped = 0
        self.blocks: list[tuple[str | None, CloseBlock]] = []
        self.block: CloseBlock | None = None
        self.running: str | None = None  # ``-v -s``: the test whose output is being printed
        self.tokens: list[tuple[int, str, str]] = []  # ``-v -s``: (line, word, node id) of each test's end

    def feed(self, lineno: int, text: str) -> str | None:
        c0 = text[:1]
        if c0 == "=" and text.startswith("==="):
            self.block = None
            if self._summary(lineno, text):
                return None
            match = _SECTION.match(text.rstrip())
            if match is None or not _PYTEST_SECTIONS.match(match["title"]):
                return text  # a banner the test printed (``=== Benchmark: current vs main ===``)
            self.section, self.test, self.in_trace = match["title"], None, False
            return None
        if c0 == "_" and text.startswith("___"):
            match = _TEST_HEADER.match(text.rstrip())
            if match:
                self.test, self.block = match["name"], None
                self.in_trace = self.section in _TRACE_SECTIONS
                return None
        if c0 == "-" and text.startswith("---") and _SUBSECTION.match(text.rstrip()):
            self.in_trace, self.block = False, None
            return None
        if c0 == "E" and (len(text) == 1 or text[1] in " \t"):
            message = text[1:].strip()
            self._exception_line(lineno, message)
            return message
        if c0 in "PFEXSR" and self._short(lineno, text):
            return None
        if self.in_trace:
            return None
        if (c0.isdigit() or c0 == "n") and self._summary(lineno, text):
            return None
        if "::" in text and self._short(lineno, text, _VERBOSE):
            return None
        if c0 == "[" and text.startswith("[gw") and self._short(lineno, text, _XDIST):
            return None
        if "%]" in text and (match := _PROGRESS.search(text.rstrip())) is not None:
            return text[: match.start()] or None
        if self.section in _PROGRESS_AREA:
            return self._progress(lineno, text)
        return text

    def _progress(self, lineno: int, text: str) -> str | None:
        """``-v -s``'s lines: a test's node id and the start of what it printed, then its outcome alone
        on a line (kept, to be set against the test's reported outcome: a test may print ``FAILED``)."""
        if self.running is not None and (match := _BARE.match(text.strip())) is not None:
            if len(self.tokens) < OUTCOME_CAP:
                self.tokens.append((lineno, match["word"], self.running))
            self.running = None
            return None
        if "::" in text and (match := _VERBOSE_START.match(text)) is not None:
            self.running = match["id"]
            return match["rest"]
        return text

    def where(self) -> str:
        """Where the last line stands, for the printout (printout.py): in a failed test's report, in the
        warnings summary, or anywhere else."""
        if self.section in _TRACE_SECTIONS:
            return SETTLED
        return WARNINGS if self.section == "warnings summary" else FREE

    def _exception_line(self, lineno: int, message: str) -> None:
        if "are not " in message and NOT_CLOSE.search(message):
            self.block = CloseBlock(lineno)
            if len(self.blocks) < BLOCK_CAP:
                self.blocks.append((self.test, self.block))
        elif self.block is not None and message and not self.block.feed(message):
            self.block = None

    def _summary(self, lineno: int, text: str) -> bool:
        match = _SUMMARY.match(text.strip())
        if match is None:
            return False
        counts = Counts()
        for number, word in _COUNT.findall(match["body"]):
            key = _WORDS.get(word)
            if key:
                setattr(counts, key, getattr(counts, key) + int(number))
        self.summary = (lineno, counts)
        return True

    def _short(self, lineno: int, text: str, pattern: re.Pattern[str] = _SHORT) -> bool:
        if text.startswith("SKIPPED ["):
            match = _SHORT_SKIP.match(text)
            if match:
                self.short_skipped += int(match["n"])
                self.outcome_sources.add("short summary")
                return True
        match = pattern.match(text.rstrip())
        if match is None or not ("::" in match["id"] or match["id"].endswith(".py")):
            return False
        nodeid = match["id"]
        if match["word"] == "RERUN":
            if len(self.reruns) < OUTCOME_CAP:
                self.reruns.setdefault(nodeid, lineno)
            return True
        self.outcome_sources.add("short summary" if pattern is _SHORT else "-v lines")
        if nodeid in self.outcomes or len(self.outcomes) < OUTCOME_CAP:
            message = (match.groupdict().get("msg") or "")[:MESSAGE_CAP]
            self.outcomes[nodeid] = (match["word"], message, lineno)
        else:
            self.outcomes_dropped += 1
        return True

    def counts_from_outcomes(self) -> Counts:
        counts = Counts(skipped=self.short_skipped)
        for nodeid, (word, _, _) in self.outcomes.items():
            if word == "ERROR" and "::" not in nodeid:
                continue  # a module that could not be collected: no test
            key = {
                "PASSED": "passed",
                "XPASS": "passed",
                "FAILED": "failed",
                "ERROR": "errors",
                "XFAIL": "xfailed",
            }.get(word, "skipped")
            setattr(counts, key, getattr(counts, key) + 1)
        return counts


# pytest's own lines start (once ANSI codes and the CI timestamp are dropped) with ``===`` (sections,
# banners, the summary), ``___`` (a test's section), ``---`` (captured output), ``E`` alone or before a
# space or tab (exception lines), ``PASSED ``/``FAILED ``/``ERROR ``/``XFAIL ``/``XPASS ``/``SKIPPED [``
# (the short summary), a digit (or ``no tests ran``) with `` in `` (the summary line), or hold ``::``
# (``-v`` outcomes; ``==`` folds to ``::`` too); the first error line of a run that ran no test holds
# an error word (alarms.py's, or ``Error while``). (A line-start expression must not take the newline
# that ends its line: the next line's test starts there.)
_STARTS = (
    b":::",
    b"___",
    b"---",
    rb"e(?: |(?=\n))",
    b"passed ",
    b"failed ",
    b"error ",
    b"xfail ",
    b"xpass ",
    b"rerun ",
    rb"skipped \[",
    b"no tests ran in ",
    rb"[\d\x80][^\n]* in ",
)


def _hs_starts(k) -> tuple[bytes, ...]:
    return (
        b"[:=]{3}",
        b"___",
        b"---",
        b"e(?:" + k.sp + b"|$)",
        *(
            k.words(w)
            for w in (
                b"passed ",
                b"failed ",
                b"error ",
                b"xfail ",
                b"xpass ",
                b"rerun ",
                b"skipped [",
                b"no tests ran in ",
            )
        ),
        k.digit + rb"[^\n]*" + k.words(b" in "),
    )


TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (key_value(ascii_only), rb"(?:error|exception) while"),
    line_start=_STARTS,
    hs=lambda k: (*hs_key_value(k), b"(?:error|exception)" + k.sp + b"while"),
    hs_line_start=_hs_starts,
    name="pytest-terminal",
)


class InnerPytest(RecognizerBase):
    """The inner pytest's frame and outcomes (JUnit XML, else the terminal): its tests are the run's
    shapes; what a test printed goes on to the other recognizers."""

    name = "pytest-terminal"
    stage = STRUCTURE
    kinds = frozenset(PYTEST_KINDS)
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.term = PytestTerminal()
        self.first_error: str | None = None  # the first error line printed, for a run that ran no test

    def feed(self, line: Line) -> None:
        text = line.text
        seen = self.term.feed(line.lineno, text)
        if self.first_error is None and (
            "rror" in text
            or "RROR" in text
            or "xception" in text
            or "ault" in text
            or "borted" in text
            or "dumped" in text
            or "llegal" in text
        ):
            self._first_error(line.lineno, seen if seen is not None else text)
        if seen is None:
            line.owned = True
            return
        traceback = text[:1] == "E" and seen is not text  # an ``E`` line: the exception pytest reports
        line.text = seen
        line.where = SETTLED if traceback else self.term.where()
        line.test = self.term.test

    def _first_error(self, lineno: int, text: str) -> None:
        """The first error line (usage banners aside): what a run that ran no test names."""
        if (is_error_line(text) or _ERROR_WHILE.search(text)) and "usage:" not in text:
            self.first_error = f"line {lineno}: {text.strip()[:200]}"

    def finish(self) -> None:
        counts, failed_checks = self._outcomes()
        n_passed = counts.passed if counts else 0
        n_failed = (counts.failed if counts else 0) + failed_checks
        errors = counts.errors if counts else 0
        self.ev.count(passed=n_passed, failed=n_failed + errors, shapes=n_passed + n_failed)

    def _outcomes(self) -> tuple[Counts | None, int]:
        """Fill in failures/problems from the outcomes; return the counts and the unmatched blocks."""
        ctx, term, ev = self.context, self.term, self.ev
        xml: JunitResult | None = None
        if ctx.junit_xml is not None:
            xml = read_junit(ctx.junit_xml)
            if xml.problem:
                ev.note(f"JUnit XML {ctx.junit_xml.name} not used: {xml.problem}; the terminal output is read")
                xml = None
        elif ctx.junit_problem:
            ev.note(f"no JUnit XML: {ctx.junit_problem}")
        counts: Counts | None = None
        bad: list[tuple[str, str, str]] = []
        uncollected: list[tuple[str, str]] = []  # modules that could not be collected: no test case
        if xml is not None:
            counts, bad, uncollected = xml.counts, list(xml.bad), list(xml.collect_errors)
            for xml_block in xml.blocks.values():
                self._greatest(xml_block)
            if term.summary is not None:
                lineno, printed = term.summary
                if printed.failed + printed.errors and not counts.failed + counts.errors + len(uncollected):
                    said = printed.describe()
                    ev.fail(f"line {lineno}: the pytest summary reports {said}; the JUnit XML no failure")
                elif (printed.passed, printed.failed) != (counts.passed, counts.failed) and not xml.attempts:
                    said = printed.describe()
                    ev.note(f"JUnit XML ({counts.describe()}) and summary line {lineno} ({said}) differ")
        elif term.summary is not None or term.outcomes or term.short_skipped:
            counts, bad, uncollected = self._terminal_outcomes()
        else:
            ev.problem(NO_RESULT)
        retried = sum(kind == RETRIED for _, kind, _ in bad)
        if term.summary is not None and term.summary[1].reruns and not retried:
            lineno, printed = term.summary
            ev.fail(
                f"line {lineno}: the pytest summary reports {printed.reruns} rerun(s): a test failed an attempt "
                "and ran again (a retry plugin); a failure retried into a pass is still a failure"
            )
        failing = {nodeid for nodeid, _, _ in bad}
        for lineno, word, nodeid in term.tokens:  # a failure word on a test pytest says passed: the test's own
            if word in ("FAILED", "ERROR") and nodeid not in failing:
                ev.fail(f"line {lineno}: {nodeid} printed {word} alone, and pytest reports it did not fail")
        by_test: dict[str | None, CloseBlock] = {}
        for test, first in term.blocks:
            by_test.setdefault(test, first)
        xml_blocks = xml.blocks if xml is not None else {}
        tails: set[str] = set()
        for nodeid, kind, message in bad:
            tail = nodeid.split("::", 1)[1].replace("::", ".") if "::" in nodeid else nodeid
            tails.add(tail)
            block = xml_blocks.get(nodeid) or by_test.get(tail)
            if kind == RETRIED:
                ev.fail(
                    f"{nodeid} failed an attempt and ran again ({message}; a retry plugin); "
                    "a failure retried into a pass is still a failure"
                )
                continue
            verb = "failed" if kind == "failed" else "error"
            detail = block.describe() if block is not None else (message or "(no message)")
            ev.fail(f"{nodeid} {verb}: {detail}")
        if counts is not None and counts.failed + counts.errors > len(bad):
            unnamed = counts.failed + counts.errors - len(bad)
            ev.fail(f"the inner pytest reports {counts.describe()}; {unnamed} not named")
        unmatched = 0
        for test, block in term.blocks:
            self._greatest(block)
            if test in tails:
                continue
            unmatched += 1
            where = f" in {test}" if test else ""
            ev.fail(f"line {block.line}: torch assert_close failed{where}: {block.describe()}")
        ran_none = (counts.ran == 0 and not unmatched) if counts is not None else ctx.exit_code in _STOPPED_EARLY
        for module, message in uncollected:  # no test ran: why; tests ran besides: an error of the run
            (ev.problem if ran_none else ev.fail)(f"{module} could not be collected: {message or '(no message)'}")
        if ran_none:
            error_line = self.first_error or ""
            ev.out.ran_no_test = error_line
            said = (
                f"{counts.skipped} skipped" + (f", {counts.xfailed} xfailed" if counts.xfailed else "")
                if counts is not None
                else f"pytest stopped with exit code {ctx.exit_code}"
            )
            ev.problem(
                f"{RAN_NO_TEST} ({said})" + (f"; the first error it printed: {error_line}" if error_line else "")
            )
        elif counts is not None and (counts.skipped or counts.xfailed):
            if counts.skipped:
                ev.note(f"the inner pytest skipped {counts.skipped} test(s)")
            if counts.xfailed:
                ev.note(f"{counts.xfailed} test(s) of the inner pytest failed as expected (xfailed)")
        if term.outcomes_dropped:
            ev.note(f"{term.outcomes_dropped} more test outcomes not kept one by one")
        return counts, unmatched

    def _terminal_outcomes(self) -> tuple[Counts, list[tuple[str, str, str]], list[tuple[str, str]]]:
        """Without a JUnit report: the counts of the summary line (else of the outcomes read), the
        failed, errored and retried tests, and the modules that could not be collected."""
        term, ev = self.term, self.ev
        counts = replace(term.summary[1]) if term.summary else term.counts_from_outcomes()
        uncollected = [
            (nodeid, msg) for nodeid, (word, msg, _) in term.outcomes.items() if word == "ERROR" and "::" not in nodeid
        ]
        if term.summary is not None:
            counts.errors = max(0, counts.errors - len(uncollected))
        bad = [
            (nodeid, "failed" if word == "FAILED" else "error", msg)
            for nodeid, (word, msg, _) in term.outcomes.items()
            if word == "FAILED" or (word == "ERROR" and "::" in nodeid)
        ]
        for nodeid, lineno in term.reruns.items():
            word = term.outcomes.get(nodeid, ("PASSED", "", 0))[0]
            if word in ("FAILED", "ERROR"):
                continue
            bad.append((nodeid, RETRIED, f"RERUN printed on line {lineno}"))
            if word == "PASSED" and counts.passed:
                counts.passed -= 1
                counts.failed += 1
        if term.summary is None:
            sources = " and the ".join(sorted(term.outcome_sources))
            ev.problem(f"no pytest summary line (output cut short?); outcomes read from the {sources}")
        return counts, bad, uncollected

    def _greatest(self, block: CloseBlock) -> None:
        for part in block.parts:
            if part.startswith("Greatest absolute difference: "):
                kind, value = read_number(part.split()[3])
                if kind == "num" and value is not None:  # a number is never None
                    self.ev.metrics.record("max_abs_error", value)


RECOGNIZERS = (InnerPytest,)
