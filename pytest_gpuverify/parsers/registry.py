"""The recognizers, found by module: what each recognizes, for which target kinds, in which order.

A recognizer is a class in a module of :mod:`pytest_gpuverify.parsers.recognizers` listed in that
module's ``RECOGNIZERS``; adding a harness's format is adding such a module (and its test file):
nothing else names it. Per output the reader builds one of each recognizer its kind takes and
hands every line to each in turn, in ``stage`` order:

1. ``STRUCTURE``: the output's own frame (an inner pytest's sections and outcomes, aiter's check
   lines): it may *own* a line, which the general readings then pass by;
2. ``TABLES``: every table, whatever its layout;
3. ``FORMATS``: harness formats read by their lines (FlyDSL's, ``Perf: 1.2 ms, 110 TFlops``);
4. ``MEASURES``: correctness measures (``cos_sim=0.999``) and printed results (NaN);
5. ``BLOCKS``: multi-line reports (torch ``assert_close``, gtest, TAP);
6. ``STATEMENTS``: status statements wherever they are printed (``status: FAIL``, ``❌``, ``False``);
7. ``ALARMS``: error lines, crash texts.

What a recognizer yields goes to the one :class:`.evidence.Evidence` of the reading.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import ClassVar, Protocol

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, KINDS, PYTEST, TRITON_PYTEST
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import TriggerSpec, compose
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.prefilter import Triggers
from pytest_gpuverify.parsers.result import ParseContext

STRUCTURE, TABLES, FORMATS, MEASURES, BLOCKS, STATEMENTS, ALARMS = 10, 20, 30, 40, 50, 60, 70
SCRIPT_KINDS = frozenset((AITER_OP_TEST, BENCH))  # a script's own output: its checks are its shapes
PARSER_NAMES = {
    AITER_OP_TEST: "aiter",
    BENCH: "bench",
    FLYDSL_PYTEST: "flydsl",
    TRITON_PYTEST: "triton",
    PYTEST: "pytest",
}


class Recognizer(Protocol):
    """``kinds``: the target kinds it reads (None: every kind); ``triggers``: where its lines may be,
    for the prefilter (:mod:`.reading.fold`); ``stage``: when it reads a line (module docstring);
    ``examples``: pieces of the lines it reads, which the tests put together into lines every way
    to check its triggers find each line it does anything with."""

    name: ClassVar[str]
    stage: ClassVar[int]
    kinds: ClassVar[frozenset[str] | None]
    triggers: ClassVar[TriggerSpec]
    examples: ClassVar[tuple[str, ...]]

    def __init__(self, context: ParseContext, ev: Evidence) -> None: ...

    def feed(self, line: Line) -> None:
        """Read one line (its ``owned``/``where`` say what recognizers before made of it)."""

    def wants_every_line(self) -> bool:
        """A construct is open (a table, a dump): the next line matters whatever it holds."""

    def holds_from(self) -> int | None:
        """The first line it may still report on (rows it keeps until a table's layout is known)."""

    def close(self) -> None:
        """The output has ended: report what is still open (a table, a block)."""

    def finish(self) -> None:
        """Every recognizer has closed: sum up the counts."""


class RecognizerBase:
    """Defaults for the :class:`Recognizer` protocol."""

    name: ClassVar[str] = ""
    stage: ClassVar[int] = FORMATS
    kinds: ClassVar[frozenset[str] | None] = None
    triggers: ClassVar[TriggerSpec] = TriggerSpec()
    examples: ClassVar[tuple[str, ...]] = ()

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        self.context = context
        self.ev = ev

    def feed(self, line: Line) -> None:
        pass

    def wants_every_line(self) -> bool:
        return False

    def holds_from(self) -> int | None:
        return None

    def close(self) -> None:
        pass

    def finish(self) -> None:
        pass


@lru_cache(maxsize=1)
def registry() -> tuple[type[RecognizerBase], ...]:
    """Every recognizer of the package, in stage order (then by name)."""
    import pytest_gpuverify.parsers.recognizers as package

    found: list[type[RecognizerBase]] = []
    for module in pkgutil.iter_modules(package.__path__):
        found += getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "RECOGNIZERS", ())
    return tuple(sorted(found, key=lambda cls: (cls.stage, cls.name)))


@dataclass(frozen=True)
class Plan:
    """How one kind's output is read: its recognizers, and the triggers of them all."""

    kind: str
    parser: str
    recognizers: tuple[type[RecognizerBase], ...]
    triggers: Triggers


@lru_cache(maxsize=1)
def all_triggers() -> Triggers:
    """The triggers of every recognizer, for every kind: one set of expressions to compile per process
    (Hyperscan's compile is the costly part of a first reading); a kind's reading is handed the few
    lines only another kind's recognizers would read, and passes them by."""
    return compose([cls.triggers for cls in registry()])


@cache
def plan_for(kind: str) -> Plan | None:
    """The plan of ``kind``; None for a kind no recognizer reads."""
    if kind not in KINDS:
        return None
    chosen = tuple(cls for cls in registry() if cls.kinds is None or kind in cls.kinds)
    return Plan(kind, PARSER_NAMES[kind], chosen, all_triggers())
