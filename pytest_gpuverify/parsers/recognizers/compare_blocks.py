"""FlyDSL's CI comparison blocks (``scripts/compare_benchmark.py``): a banner naming the base, then one
line per case with the base's figure and the current one::

    === Benchmark: current vs main ===
      softmax 32768x8192 bf16  main=  4.105 TB/s  current=  3.938 TB/s  ratio= 0.959x  delta= -0.167 ( -4.1%)

Two perf rows per line, their sides the two named (``main``, ``current``), their shape the op, shape
and dtype; a time in ``us`` is the row's time, any other unit a figure of its metrics. The block's
lines are owned here: no table reads its ``key= value`` cells.
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.lines import NUMBER, read_number
from pytest_gpuverify.parsers.registry import STRUCTURE, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import PerfRow

_COMPARE_HEAD = re.compile(r"^=== Benchmark: current vs (?P<base>\S+) ===$")
_COMPARE_ROW = re.compile(
    rf"^(?P<op>\S+) (?P<shape>\S+) (?P<dtype>\S+)\s+(?P<base>[^\s=]+)=\s*(?P<bv>{NUMBER}) (?P<unit>\S+)"
    rf"\s+current=\s*(?P<cv>{NUMBER}) \S+"
)
# the banner at a line's start (``=`` folds to ``:``)
TRIGGERS = TriggerSpec(line_start=(b":::",), hs_line_start=lambda k: (b"[:=]{3}",), name="compare-blocks")


class CompareBlocks(RecognizerBase):
    name = "compare-blocks"
    stage = STRUCTURE
    triggers = TRIGGERS
    examples = (
        "=== Benchmark: current vs main ===",
        "  softmax 32768x8192 bf16  main=  4.105 TB/s  current=  3.938 TB/s",
    )

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.base: str | None = None  # the base named by ``=== Benchmark: current vs X ===``

    def wants_every_line(self) -> bool:
        return self.base is not None

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        stripped = line.text.strip()
        if self.base is not None:
            match = _COMPARE_ROW.match(stripped)
            if match:
                self._row(line.lineno, match)
                line.owned = line.figures_read = True
                return
            self.base = None
        if stripped.startswith("==="):
            match = _COMPARE_HEAD.match(stripped)
            if match:
                self.base = match["base"]
                line.owned = True

    def _row(self, lineno: int, match: re.Match[str]) -> None:
        shape = f"op={match['op']}, shape={match['shape']}, dtype={match['dtype']}"
        unit = match["unit"]
        for who, text in ((match["base"], match["bv"]), ("current", match["cv"])):
            state, value = read_number(text)
            if state != "num":
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: {state} for {who} ({shape})")
            us = value if unit == "us" else None
            metrics = {} if unit == "us" else {unit: value}
            self.ev.add_perf(
                PerfRow(shape=shape, name=unit, us_median=us, metrics=metrics, side=who, source_line=lineno)
            )


RECOGNIZERS = (CompareBlocks,)
