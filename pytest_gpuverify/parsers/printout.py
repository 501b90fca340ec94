"""Every word of the printout, whatever the kind: one scan that reads each line after the kind's own
parser (aiter.py, pytest_run.py and the parsers built on them) has read it.

- **Verdict lines** (:data:`VERDICT_LINES`, on by default for every kind): the pass and fail lines common
  harnesses print (``✅ Triton and Torch match``, ``Allclose(atol=0.1, rtol=0.2): False``,
  ``Correctness test passed!``, ``✓ PASSED max_abs_diff=...``, ``--> PASS``, ``Some tests FAILED.``).
  Each line read is one check: a failed one fails the run, whatever passing figure came before it.
  In the scripts' kinds each is a shape too; in the pytest kinds the shapes are the tests, and a
  verdict line a test printed is a check inside it (``checks_passed``/``checks_failed``).
  A declaration adds its own (``pass_pattern``/``fail_pattern``) and turns entries off by name
  (``verdict_lines_off``). A line the kind's parser already read as a check is not read again.
- **assert_close failure blocks**: ``Tensor-likes are not close!`` (torch ``assert_close``), and a
  ``Mismatched elements: N / M`` with N > 0 (torch, numpy ``assert_allclose``), printed anywhere the
  kind's parser did not count it as a test's failure (a harness that catches the error and prints
  it, an exception in a worker thread): a failed check.
- **Alarms** (:mod:`.alarms`): an error line or a traceback, a ``failed`` word no reader read, and
  pytest's ``PytestUnhandledThreadExceptionWarning``/``PytestUnraisableExceptionWarning``: each a
  problem (the run proves nothing), quoted.
- **The exit status as the check** (``exit_status_is_check``): exit 0 is one checked shape.

Where a line stands decides what it may be. The pytest kinds say so (:data:`FREE`, :data:`SETTLED`,
:data:`WARNINGS`): inside a failed test's report (``FAILURES``/``ERRORS``) the test's failure is
already counted, and the traceback there is pytest's; in pytest's ``warnings summary`` only the two
warnings above are alarms (with the assert_close block an unhandled thread exception carries), the
other warnings' words are theirs. Every other line, in every kind, is read whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from pytest_gpuverify.parsers.alarms import Alarms
from pytest_gpuverify.parsers.metrics import has_measure
from pytest_gpuverify.parsers.result import CappedRecorder, ParseContext
from pytest_gpuverify.parsers.shape_checks import SUMMARY

FREE, SETTLED, WARNINGS = "free", "settled", "warnings"  # where a line stands (pytest kinds)

# ----- the vocabulary ---------------------------------------------------------------------------

_PASS_MARKS = "\u2705\u2713\u2714\u2611"  # ✅ ✓ ✔ ☑
_FAIL_MARKS = "\u274c\u2717\u2718\u2716\u274e"  # ❌ ✗ ✘ ✖ ❎
_MARKS = re.compile(f"[{_PASS_MARKS}{_FAIL_MARKS}]")
_PASS_WORD = re.compile(r"\b(?:match(?:es|ed|ing)?|pass(?:es|ed)?|correct|ok|success(?:ful)?|identical|equal|same|close"
                        r"|verified)\b", re.I | re.A)
_FAIL_WORD = re.compile(r"\b(?:differ(?:s|ent|ence|ences)?|mismatch(?:es|ed)?|fail(?:s|ed|ure|ing)?|incorrect|wrong"
                        r"|errors?|not\s+(?:close|equal|match(?:ing)?|the\s+same))\b", re.I | re.A)


def _mark(text: str, low: str) -> Optional[bool]:
    """A check mark, then a verdict word after it: a fail mark (❌ ✗) fails; a pass mark (✅ ✓) with a
    pass word and no fail word after it passes."""
    found = _MARKS.search(text)
    if found is None:
        return None
    rest = text[found.end():]
    if found.group() in _FAIL_MARKS:
        return False if _FAIL_WORD.search(rest) or _PASS_WORD.search(rest) else None
    if _FAIL_WORD.search(rest):
        return None  # ``✓ no mismatch``: not read; an unread ``failed`` is an alarm
    return True if _PASS_WORD.search(rest) else None


_ALLCLOSE = re.compile(r"\ball[_ ]?close\b(?:\s*\([^()\n]*\))?\s*(?:[:=]=?|\bis\b|->)\s*(?P<v>true|false|passed|failed)\b",
                       re.I | re.A)


def _allclose(text: str, low: str) -> Optional[bool]:
    if "close" not in low:
        return None
    found = _ALLCLOSE.search(text)
    return None if found is None else found["v"].lower() in ("true", "passed")


_SAID = r"\s*(?:[:=\-]+>?\s*|\s+)(?:is\s+|was\s+|has\s+)?"
# ``Correctness test passed!``, ``Accuracy: OK``, ``verification incorrect``; ``Check passed``, ``Result: FAIL``
_CORRECTNESS = re.compile(
    rf"\b(?:(?:correctness|accuracy|verification|validation|numerics)(?:[ _-](?:test|check)s?)?{_SAID}"
    rf"(?P<v>pass(?:ed)?|fail(?:ed|ure)?|ok|correct|incorrect)"
    rf"|(?:checks?|results?)(?:[ _-](?:test|check)s?)?{_SAID}(?P<w>pass(?:ed)?|fail(?:ed|ure)?))\b(?!\s+to\b)",
    re.I | re.A)


def _correctness(text: str, low: str) -> Optional[bool]:
    if not ("pass" in low or "fail" in low or "correct" in low or "accura" in low or "verif" in low or "valid" in low
            or "numeric" in low):
        return None
    found = _CORRECTNESS.search(text)
    if found is None:
        return None
    return (found["v"] or found["w"]).lower() in ("pass", "passed", "ok", "correct")


_FIGURE_WORD = re.compile(r"(?<![\w-])(?:(?P<fail>FAIL(?:ED)?|[Ff]ailed)|(?P<pass>PASS(?:ED)?|[Pp]assed))(?![\w-])")


def _figure_word(text: str, low: str) -> Optional[bool]:
    """A ``PASS``/``FAIL`` word on a line with a correctness figure (a measure metrics.py reads); a
    summary (``All 8 tests passed, cos=...``) is none."""
    if not ("pass" in low or "fail" in low) or not has_measure(text) or SUMMARY.search(text):
        return None
    words = list(_FIGURE_WORD.finditer(text))
    if not words:
        return None
    return not any(w["fail"] for w in words)


_BARE = {"pass": True, "passed": True, "fail": False, "failed": False, "failure": False}


def _bare_word(text: str, low: str) -> Optional[bool]:
    """The verdict word alone on its line, maybe after an arrow or in brackets: ``--> PASS``, ``[FAIL]``."""
    word = low.strip().strip("-=<>[](){}|*#:.!\u2192 \t")
    return _BARE.get(word) if len(word) <= 7 else None


_THINGS = r"(?:tests?|checks?|cases?|shapes?|configs?|configurations?|comparisons?)"
_SOME_FAILED = re.compile(rf"\b(?:some|(?P<n>\d+)(?:\s*(?:/|of)\s*\d+)?)\s+{_THINGS}\s+(?:have\s+)?failed\b", re.I | re.A)


def _tests_summary(text: str, low: str) -> Optional[bool]:
    """A summary of failures (``3 TESTS FAILED``, ``Some tests FAILED.``); ``0 tests failed`` is none,
    and a summary of passes (``All 8 tests passed``) no shape of its own: the shapes are counted."""
    if "failed" not in low:
        return None
    found = _SOME_FAILED.search(text)
    if found is None or (found["n"] is not None and int(found["n"]) == 0):
        return None
    return False


@dataclass(frozen=True)
class VerdictLine:
    """One entry of the vocabulary: ``read(text, text.lower())`` is True (a pass), False (a failure) or None."""

    name: str
    read: Callable[[str, str], Optional[bool]]
    passes: Optional[str]  # an example of each, for the README and the tests (None: only failures are read)
    fails: str


VERDICT_LINES = (
    VerdictLine("check-mark", _mark, "✅ Triton and Torch match", "❌ Some implementations differ"),
    VerdictLine("allclose", _allclose, "allclose: True", "Allclose(atol=0.1, rtol=0.2): False"),
    VerdictLine("correctness", _correctness, "Correctness test passed!", "correctness check: FAILED"),
    VerdictLine("word-with-figure", _figure_word, "PASSED max_abs_diff=0.0012", "FAILED cos_sim=0.9421"),
    VerdictLine("word-alone", _bare_word, "--> PASS", "FAILED"),
    VerdictLine("tests-summary", _tests_summary, None, "Some tests FAILED."),
)


def _may_say(low: str) -> bool:
    """Whether an ASCII line (lower-cased) holds a word some verdict line needs (a mark is non-ASCII)."""
    return ("pass" in low or "fail" in low or "correct" in low or "close" in low or "accura" in low or "verif" in low
            or "valid" in low or "numeric" in low)


# ----- assert_close failure blocks ----------------------------------------------------------------

_NOT_CLOSE = re.compile(r"(?<![\w\"'])(?:Tensor-likes|Scalars) are not (?:close|equal)!")
_MISMATCHED = re.compile(r"(?<![\w\"'])Mismatched elements: (?P<n>\d+) / (?P<m>\d+)")
_DETAIL = re.compile(r"(?<![\w\"'])(?:Mismatched elements: \d+ / \d+ \([^)]*\)|Greatest (?:absolute|relative) difference: .*)")
BLOCK_SPAN = 8  # the lines after a ``not close`` line that may hold its details
# pytest's words for an exception no test saw (a worker thread's, a finalizer's): the test passed regardless
_PYTEST_WARNINGS = re.compile(r"\bPytest(?:UnhandledThreadException|UnraisableException)Warning\b")


class Printout:
    """The scan. ``fail``/``problem`` record through the parser (its caps); :meth:`settle` adds the
    checks read to the parser's correctness once it has summed up."""

    def __init__(self, rec: CappedRecorder, context: ParseContext, as_shapes: bool = True) -> None:
        self._fail = rec.fail
        self.as_shapes = as_shapes  # False in the pytest kinds: their tests are the shapes
        self._note = rec.note
        self.alarms = Alarms(rec.problem)
        self.lines = tuple(v for v in VERDICT_LINES if v.name not in context.verdict_lines_off)
        self.pass_rx = re.compile(context.pass_pattern) if context.pass_pattern else None
        self.fail_rx = re.compile(context.fail_pattern) if context.fail_pattern else None
        self.exit_check = context.exit_status_is_check and context.exit_code == 0
        self.passed = self.failed = 0  # verdict lines and assert_close blocks read
        self.block_line = -BLOCK_SPAN  # the last ``not close`` line
        self.block: list[str] = []

    def feed(self, lineno: int, text: str, checked: bool = False, where: str = FREE) -> None:
        """``checked``: the kind's parser read the line as a check; ``where``: where it stands. A line
        holding ``\\r`` (a progress bar, then a verdict) is read as the pieces a terminal shows in turn."""
        if where == SETTLED:
            return
        if "\r" in text:
            for piece in text.split("\r"):
                if piece:
                    self._feed(lineno, piece, checked, where)
            return
        self._feed(lineno, text, checked, where)

    def _feed(self, lineno: int, text: str, checked: bool, where: str) -> None:
        if where == WARNINGS:
            if ("Warning" in text and "Pytest" in text) and _PYTEST_WARNINGS.search(text):
                self.alarms.raise_alarm(lineno, "pytest caught an exception no test saw", text)
            self._block(lineno, text)
            return
        read = checked or self._block(lineno, text) or self._verdict(lineno, text)
        self.alarms.observe(lineno, text, failed_read=read)
        if "Warning" in text and "Pytest" in text and _PYTEST_WARNINGS.search(text):
            self.alarms.raise_alarm(lineno, "pytest caught an exception no test saw", text)

    def _verdict(self, lineno: int, text: str) -> bool:
        """A verdict line: one check; True when the line was read as one."""
        if self.fail_rx is not None and self.fail_rx.search(text):
            self.failed += 1
            self._fail(f"line {lineno}: fail_pattern matches: {text.strip()[:200]}")
            return True
        low = text.lower()
        said: list[tuple[str, Optional[bool]]] = []
        if not text.isascii() or _may_say(low):  # most lines hold no verdict word: a few substring tests
            said = [(v.name, v.read(text, low)) for v in self.lines]
        failed = next((name for name, outcome in said if outcome is False), None)
        if failed is not None:
            self.failed += 1
            self._fail(f"line {lineno}: a failure verdict line ({failed}): {text.strip()[:200]}")
            return True
        if (self.pass_rx is not None and self.pass_rx.search(text)) or any(outcome for _, outcome in said):
            self.passed += 1
            return True
        return False

    def _block(self, lineno: int, text: str) -> bool:
        """An assert_close failure block: its ``not close`` line, or a ``Mismatched elements: N / M``
        with N > 0 that no such line came just before; each block one failed check."""
        if "not " in text and (said := _NOT_CLOSE.search(text)) is not None:
            self._close_block()
            self.block_line, self.block = lineno, [f"line {lineno}: assert_close failed: {said.group()}"]
            return True
        if "ifference" not in text and "ismatched" not in text:
            return False
        detail = _DETAIL.search(text)
        if detail is None:
            return False
        if self.block and lineno - self.block_line <= BLOCK_SPAN:
            if len(self.block) < 3:
                self.block.append(detail.group().strip())
            return True
        found = _MISMATCHED.search(text)
        if found is None or int(found["n"]) == 0:
            return False
        self._close_block()
        self.block_line, self.block = lineno, [f"line {lineno}: assert_close failed: {detail.group().strip()}"]
        return True

    def _close_block(self) -> None:
        if self.block:
            self.failed += 1
            self._fail("; ".join(self.block))
            self.block = []

    def close(self) -> None:
        """The output has ended: the last block is a failure now; the alarms' count line."""
        self._close_block()
        self.alarms.close()
        if self.exit_check:
            self._note("exit status 0 counted as one checked shape (the declaration's exit_status_is_check)")

    def settle(self, correctness) -> None:
        """The checks this scan read, into the parser's summed-up correctness (``passed`` is already
        False when any failure was recorded): each verdict line or block one check, and one shape
        where the kind's shapes are not its tests."""
        passed = self.passed + self.exit_check
        correctness.checks_passed += passed
        correctness.checks_failed += self.failed
        if self.as_shapes:
            correctness.shapes_checked += passed + self.failed
            if correctness.passed is None and passed and not self.failed:
                correctness.passed = True
