"""A declaration's own words (``pass_pattern``/``fail_pattern``, regular expressions compiled at load
time): a line matching ``fail_pattern`` is a failed check, one matching ``pass_pattern`` a passed
one, each weighed with every other reading of its line. A declared pattern may match any line: the
reader then hands over every line (reader.py)."""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.registry import STATEMENTS, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext


class DeclaredWords(RecognizerBase):
    name = "declared"
    stage = STATEMENTS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.pass_rx = re.compile(context.pass_pattern) if context.pass_pattern else None
        self.fail_rx = re.compile(context.fail_pattern) if context.fail_pattern else None

    def feed(self, line: Line) -> None:
        if line.owned or (self.pass_rx is None and self.fail_rx is None):
            return
        text = line.text
        if self.fail_rx is not None and self.fail_rx.search(text):
            self.ev.reading(line.lineno, False, f"line {line.lineno}: fail_pattern matches: {text.strip()[:200]}")
        elif self.pass_rx is not None and self.pass_rx.search(text):
            self.ev.reading(line.lineno, True)


RECOGNIZERS = (DeclaredWords,)
