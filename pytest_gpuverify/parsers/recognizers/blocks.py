"""Reports printed over several lines, read as one, in every kind; each owns its lines.

- **torch ``assert_close`` failures**: ``Tensor-likes are not close!`` (or ``Scalars``, ``equal``; not
  inside a quoted source line), with the ``Mismatched elements``/``Greatest ... difference`` lines
  after it, or a ``Mismatched elements: N / M`` with N > 0 alone (numpy's ``assert_allclose`` too):
  one failed check, printed anywhere an inner pytest's report did not count it as a test's failure
  (a harness that catches the error and prints it, an exception in a worker thread).
- **googletest**: each ``[       OK ]``/``[  FAILED  ]`` test is a check (a test listed again in the
  closing list is the same one); the tail ``[  PASSED  ] N tests.`` counts its N where the
  per-test lines were not printed.
- **TAP**: ``ok 3 - gemm`` passes, ``not ok 3 - gemm`` fails (``# TODO`` an expected failure, ``# SKIP``
  no check).
- **Python tracebacks**: the ``File "...", line N`` lines and the source lines under them are code, not
  output (``assert diff == 0, "FAILED"`` says nothing ran); the exception's own line after them is
  output, read as any other (the alarms make it a problem).
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import SETTLED, Line
from pytest_gpuverify.parsers.registry import BLOCKS, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext

_NOT_CLOSE = re.compile(r"(?<![\w\"'])(?:Tensor-likes|Scalars) are not (?:close|equal)!")
_MISMATCHED = re.compile(r"(?<![\w\"'])Mismatched elements: (?P<n>\d+) / (?P<m>\d+)")
_DETAIL = re.compile(
    r"(?<![\w\"'])(?:Mismatched elements: \d+ / \d+ \([^)]*\)|Greatest (?:absolute|relative) difference: .*)"
)
BLOCK_SPAN = 8  # the lines after a ``not close`` line that may hold its details

# googletest pads its tag to ten characters: ``[ RUN      ]``, ``[       OK ]``, ``[  FAILED  ]``, ``[==========]``
_GTEST = re.compile(r"^\[(?=[^\]]{10}\])\s*(?P<word>OK|FAILED|PASSED|SKIPPED|RUN|=+|-+)\s*\]\s*(?P<rest>.*)$")
_GTEST_TESTS = re.compile(r"^(?P<n>\d+) tests?\b")
_GTEST_NAME = re.compile(r"^(?P<name>[\w/.:<>,\- ]+?)(?:\s*\(\d+ ms\))?\s*$")
_TRACEBACK = "Traceback (most recent call last):"
_TAP = re.compile(r"^(?P<not>not )?ok (?P<n>\d+)\b\s*-?\s*(?P<desc>[^#]*)(?:#\s*(?P<directive>TODO|SKIP)\b.*)?$", re.I)

# ``are not close``, ``mismatched elements``, ``greatest``; gtest's bracketed words and TAP's ``ok N``
# at a line's start.
_WORDS = (rb"are not (?:close|equal)", b"mismatched elements", b"greatest", b"traceback (most recent call last)")
_STARTS = (rb"\[ *(?:ok|failed|passed|skipped|run|=|-)", rb"(?:not )?ok [\d\x80]")
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: _WORDS,
    line_start=_STARTS,
    name="blocks",
    hs=lambda k: (
        k.words(b"are not ") + b"(?:close|equal)",
        k.words(b"mismatched elements"),
        b"greatest",
        k.words(b"traceback (most recent call last)"),
    ),
    hs_line_start=lambda k: (
        rb"\[" + k.sp + b"*(?:ok|failed|passed|skipped|run|=|-)",
        b"(?:not" + k.sp + b")?ok" + k.sp + k.digit,
    ),
)


class Blocks(RecognizerBase):
    name = "blocks"
    stage = BLOCKS
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.block_line = -BLOCK_SPAN  # the last ``not close`` line
        self.block: list[str] = []
        self.gtest_passed: set[str] = set()
        self.gtest_failed: set[str] = set()
        self.gtest_tail = 0  # the tail's ``[  PASSED  ] N tests.``
        self.traceback = False  # inside a Python traceback's frames

    def wants_every_line(self) -> bool:
        return self.traceback

    def feed(self, line: Line) -> None:
        if line.owned or line.where == SETTLED:
            return
        text = line.text
        if self.traceback:
            if text[:1] in (" ", "\t") and text.strip():
                line.owned = True  # a frame, its source line, a caret line: code, not output
                return
            self.traceback = False
        if text.startswith(_TRACEBACK):
            self.traceback = True  # (the Traceback line itself is the alarms')
            return
        if self._assert_close(line.lineno, text):
            line.owned = True
        elif text[:1] == "[" and self._gtest(line.lineno, text):
            line.owned = True
        elif text[:1] in "on" and self._tap(line.lineno, text):
            line.owned = True

    # ----- torch assert_close ----------------------------------------------------------------
    def _assert_close(self, lineno: int, text: str) -> bool:
        """Its ``not close`` line, or a ``Mismatched elements: N / M`` with N > 0 that no such line came
        just before; each block one failed check."""
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
            self.ev.fail("; ".join(self.block))
            self._checked(failed=1)
            self.block = []

    def _checked(self, passed: int = 0, failed: int = 0) -> None:
        inside = self.ev.inside_tests
        self.ev.count(passed=passed, failed=failed, shapes=0 if inside else passed + failed, decisive=not inside)

    # ----- googletest --------------------------------------------------------------------------
    def _gtest(self, lineno: int, text: str) -> bool:
        found = _GTEST.match(text)
        if found is None:
            return False
        word, rest = found["word"], found["rest"]
        if word == "PASSED":
            tests = _GTEST_TESTS.match(rest)
            if tests is not None:
                self.gtest_tail = max(self.gtest_tail, int(tests["n"]))
            return True
        if word in ("OK", "FAILED"):
            if _GTEST_TESTS.match(rest) or rest.startswith(("listed", "TEST")):
                return True  # ``[  FAILED  ] 3 tests, listed below:``: the failed ones follow by name
            named = _GTEST_NAME.match(rest)
            name = named["name"] if named else rest
            if word == "OK":
                self.gtest_passed.add(name)
            elif name not in self.gtest_failed:
                self.gtest_failed.add(name)
                self.ev.fail(f"line {lineno}: googletest {name} failed")
                self._checked(failed=1)
        return True

    # ----- TAP ----------------------------------------------------------------------------------
    def _tap(self, lineno: int, text: str) -> bool:
        found = _TAP.match(text.rstrip())
        if found is None:
            return False
        directive = (found["directive"] or "").upper()
        if directive == "SKIP" or (found["not"] and directive == "TODO"):
            return True
        if found["not"]:
            self.ev.fail(f"line {lineno}: TAP test {found['n']} failed: {text.strip()[:200]}")
            self._checked(failed=1)
        else:
            self._checked(passed=1)
        return True

    def close(self) -> None:
        self._close_block()

    def finish(self) -> None:
        passed = len(self.gtest_passed - self.gtest_failed)
        if self.gtest_tail > passed:
            passed = self.gtest_tail  # the tail counts the tests whose own lines were not printed
        if passed:
            self._checked(passed=passed)


RECOGNIZERS = (Blocks,)
