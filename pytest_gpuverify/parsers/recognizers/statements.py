"""Status statements wherever a line prints them, in every kind (:mod:`..reading.statements` reads
them): each line with a failing statement is one failed check, one with only passing ones a passed
check (a shape of a script's own; a check inside a test of an inner pytest). A line a recognizer
read as its own check is not counted again; its failure still outranks its pass. A ``failed`` no
statement could hold is an alarm. A line holding ``\\r`` (a progress bar, then a verdict) is read as
the pieces a terminal shows in turn.

A declaration turns a family off by name (``verdict_lines_off``): its failures are then unattached
words (an alarm), its passes nothing.
"""

from __future__ import annotations

from pytest_gpuverify.parsers.evidence import FAILED_WORD, Evidence
from pytest_gpuverify.parsers.reading import statements
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.hsscan import Cased
from pytest_gpuverify.parsers.reading.line import FREE, Line
from pytest_gpuverify.parsers.registry import STATEMENTS, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext

# The words a statement holds (statements.read), each starting with a literal the re engine scans for,
# bounded where a longer word is common (``matching``, ``token``); the marks are non-ASCII: read in the
# unfolded chunk.
_END = rb"(?![a-z0-9_])"
# ``OK`` in upper case (``ok`` in lower case is prose, no status): read in the unfolded chunk, with its case
OK_CASED = rb"OK(?<![A-Za-z0-9_]OK)(?![A-Za-z0-9_])"
WORDS = (
    b"pass",
    b"fail",
    b"correct",
    b"wrong",
    b"identical",
    b"agree",
    b"consistent",
    b"not match",
    b"verifie",
    b"true" + _END,
    b"false" + _END,
    rb"match(?:es|ed)?" + _END,
    rb"differ(?:s|ed|ent)?" + _END,
    b"nan" + _END,
    rb"close" + _END,
    b"equal" + _END,
    b"same" + _END,
)
_HS_END = rb"(?:[^a-z0-9_]|$)"
HS_WORDS = (
    b"pass",
    b"fail",
    b"correct",
    b"wrong",
    b"identical",
    b"agree",
    b"consistent",
    b"not match",
    b"verifie",
    b"verifie",
    b"true" + _HS_END,
    b"false" + _HS_END,
    rb"match(?:es|ed)?" + _HS_END,
    rb"differ(?:s|ed|ent)?" + _HS_END,
    b"nan" + _HS_END,
    b"close" + _HS_END,
    b"equal" + _HS_END,
    b"same" + _HS_END,
    Cased(rb"(?:^|[^A-Za-z0-9_])OK(?:[^A-Za-z0-9_]|$)"),
)
MARKS = rb"\xe2\x9c[\x85\x93\x94\x96\x97\x98]|\xe2\x9d[\x8c\x8e]|\xe2\x98\x91"
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: WORDS, raw=(MARKS,), cased=(OK_CASED,), hs=lambda k: (*HS_WORDS, MARKS), name="statements"
)


class Statements(RecognizerBase):
    name = "statements"
    stage = STATEMENTS
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.off = frozenset(context.verdict_lines_off)

    def feed(self, line: Line) -> None:
        if line.owned or line.where != FREE:
            return
        text = line.text
        if "\r" in text:
            for piece in text.split("\r"):
                if piece:
                    self._read(line, piece)
        else:
            self._read(line, text)

    def _read(self, line: Line, text: str) -> None:
        for said in statements.read(text, line.measured):
            off = said.family in self.off
            if said.passed is None or (off and said.passed is False and said.word.lower().startswith("fail")):
                self.ev.unattached(line.lineno, FAILED_WORD, text)
            elif off and said.passed is False:  # turned off, it still proves nothing passed
                self.ev.unattached(line.lineno, f"a failure statement of a family turned off ({said.family})", text)
            elif off:
                continue
            elif said.passed:
                self.ev.reading(line.lineno, True, summary=said.family == "tests-summary")
            elif said.family == "word-with-figure":
                where = f"line {line.lineno}: {line.label}" if line.label else f"line {line.lineno}"
                self.ev.reading(line.lineno, False, f"{where}: printed {said.word}")
            else:
                self.ev.reading(
                    line.lineno,
                    False,
                    f"line {line.lineno}: a failure verdict line ({said.family}): {text.strip()[:200]}",
                )


RECOGNIZERS = (Statements,)
