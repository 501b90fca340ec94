"""One line as every recognizer reads it: the printed text less the prefixes that are no part of what
the program said, and what the recognizers before have learnt of it.

Dropped, in order: ANSI escape codes, a CI runner's timestamp (``2026-01-02T03:04:05.1234567Z ``),
an A/B side (``[A] ``, ``B: ``, ``[base] ``: bench harnesses only, where it names the row's side),
and aiter's logger prefix (``[aiter] ``, ``[aiter INFO] ``; with ``AITER_LOG_MORE=1`` a header line
alone, the message on the next line). A logger record starts a new statement: a table never spans
two (``record_start``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_gpuverify.parsers.reading.lines import strip_ansi, strip_ci_prefix

FREE, SETTLED, WARNINGS = "free", "settled", "warnings"  # where a line stands (an inner pytest's sections)

_LEVELS = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
# AITER_LOG_MORE=1 prints this header alone and the message on the next line.
_LOG_MORE_HEADER = re.compile(rf"^\[aiter (?:{_LEVELS})\] \d{{4}}-\d\d-\d\d[ T]")
_LOGGER_PREFIX = re.compile(rf"^\[aiter(?: (?:{_LEVELS}))?\] ?")
SIDE_PREFIX = re.compile(r"^(?:\[(?P<b>[ABab]|base|head)\]|(?P<c>[ABab]):)\s+")


@dataclass(slots=True)
class Line:
    """``owned``: a recognizer read the line as part of its own construct (an inner pytest's report
    line, the tensor dump under a failed check) and accounted for what it says: the general readings
    (statements, measures, alarms) pass it by. ``where``: where it stands in an inner pytest's output
    (a failed test's report is ``SETTLED``: that test's failure, counted already)."""

    lineno: int
    text: str
    side: str | None = None
    record_start: bool = False
    owned: bool = False
    where: str = FREE
    measured: bool = False  # a correctness measure was read on it (``cos_sim=0.99``)
    label: str = ""  # what it printed before its first measure (``M=128 N=4096``)
    ends_tables: bool = False  # it holds a check's verdict: a table never runs across it
    figures_read: bool = False  # a recognizer read its figures (a table's row, a timing line)
    test: str | None = None  # the inner pytest's test whose section it is in (``test_y[bf16]``)


def clean(lineno: int, raw: str, sides: bool) -> Line:
    """The line a recognizer reads; ``sides``: the kind's lines may carry an A/B side prefix."""
    text = strip_ansi(raw) if "\x1b" in raw else raw
    if text[:1].isdigit() and "Z " in text[:40]:
        text = strip_ci_prefix(text)
    side = None
    if sides and text[:1] in ("[", "A", "B", "a", "b") and (match := SIDE_PREFIX.match(text)) is not None:
        side = match["b"] or match["c"]
        text = text[match.end() :]
    line = Line(lineno, text, side)
    if text.startswith("[aiter"):
        line.record_start = True
        if text.startswith("[aiter] "):
            line.text = text[8:]
        elif _LOG_MORE_HEADER.match(text):
            line.text, line.owned = "", True  # the message is on the next line
        else:
            line.text = _LOGGER_PREFIX.sub("", text, count=1)
    return line
