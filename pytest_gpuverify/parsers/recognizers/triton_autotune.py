"""Triton's autotuner's own lines (``TRITON_PRINT_AUTOTUNING=1``), which the engine turns on for the kinds
Triton runs in: each ``best config selected`` is the run's choice for that function, recorded in the
output's ``autotune`` and never read as a check or a figure.

Triton 3.0 to 3.3 print one line per tuning (cut in two here), forks add a key or timings before the config::

    Triton autotuning for function _attn_fwd finished after 161.22s; best config selected: BLOCK_M: 256, num_warps: 32,
    num_ctas: 1, num_stages: 3, maxnreg: None;

Later versions print it over four lines, the tuning key on the second::

    Triton autotuning for function _infonce_matmul_fwd_kernel,
    with key as (1024, 1024, 512, 'torch.float16'),
    finished after 1.01s,
    best config selected: BLOCK_SIZE_M: 64, num_warps: 4, num_ctas: 1, num_stages: 4, maxnreg: None;

and one line per configuration tried (``Autotuning kernel <name> with config ...``) and per one that
could not run (``Autotuning failed with out of resource: ...``: the autotuner skips it, no result fails).
Every such line is owned here: the general readings pass it by (a key's ``torch.float16`` is no
output dtype, ``failed`` no failure of the kernel's results, ``1.01s`` no timing).
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.registry import STRUCTURE, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import AutotuneChoice

AUTOTUNE_CAP = 2000  # choices kept per output (a test file tunes each kernel per shape); the rest are counted

_HEAD = re.compile(r"autotuning for function (?P<fn>[^\s,;]+)")
_SECONDS = re.compile(r"finished after (?P<s>\d+(?:\.\d+)?)s\b")
_KEY = re.compile(
    r"with key as (?P<key>.*?),?\s*$|(?:key info|config key): (?P<inline>.*?), (?:best config|benchmark key)"
)
_BEST = re.compile(r"best config selected: (?P<cfg>.*?)(?: with benchmark time .*)?;")
_TRIED = ("Autotuning kernel ", "Autotuning failed with ")
_PAIR_SPLIT = re.compile(r", (?=[A-Za-z_][\w.]*: )")  # a value may hold ", " (a tuple); a name never does
_BLOCK_LINES = 5  # a four-line printout's lines after its head, with one stray line (stderr) between

Value = bool | int | float | str | None


def read_config(text: str) -> dict[str, Value]:
    """``BLOCK_M: 128, num_warps: 4, maxnreg: None`` as names and values (numbers, booleans and None
    as such, anything else as printed)."""
    config: dict[str, Value] = {}
    for pair in _PAIR_SPLIT.split(text.strip()):
        name, sep, value = pair.partition(": ")
        if sep:
            config[name.strip()] = _value(value.strip())
    return config


def _value(text: str) -> Value:
    if text in ("None", "True", "False"):
        return None if text == "None" else text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (
        rb"autotuning for function",
        rb"best config selected",
        rb"autotuning kernel ",
        rb"autotuning failed with ",
    ),
    hs=lambda k: (
        k.words(b"autotuning for function"),
        k.words(b"best config selected"),
        k.words(b"autotuning kernel "),
        k.words(b"autotuning failed with "),
    ),
    name="triton-autotune",
)


class TritonAutotune(RecognizerBase):
    name = "triton-autotune"
    stage = STRUCTURE
    triggers = TRIGGERS
    examples = (
        "Triton autotuning for function _fwd_kernel,",
        "Triton autotuning for function _fwd_kernel finished after ",
        "with key as (1024, 'torch.float16'),",
        "finished after 1.01s,",
        "finished after 2.31s; ",
        "best config selected: BLOCK_M: 128, num_warps: 4, maxnreg: None;",
        "key info: (8, 64), ",
        "Autotuning kernel _fwd_kernel with config BLOCK_M: 64, num_warps: 4",
        "Autotuning failed with out of resource: shared memory, Required: 131072",
    )

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.open: dict | None = None  # a four-line printout under way: its function, key, seconds, lines left
        self.dropped = 0

    def wants_every_line(self) -> bool:
        return self.open is not None

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        text = line.text
        if self.open is not None:
            self._continue(line, text)
            return
        head = _HEAD.search(text) if "utotuning for function" in text else None
        if head is not None:
            line.owned = line.figures_read = True
            found = {"fn": head["fn"], "key": None, "s": None, "line": line.lineno, "left": _BLOCK_LINES}
            self._details(found, text[head.end() :])
            best = _BEST.search(text, head.end())
            if best is None:
                self.open = found  # the head of a four-line printout
            else:
                self._choice(found, best["cfg"], line.lineno)
        elif "best config selected: " in text and (best := _BEST.search(text)) is not None:
            line.owned = line.figures_read = (
                True  # its head was cut off (a truncated log): the config is still the choice
            )
            self._choice({"fn": "unknown", "key": None, "s": None}, best["cfg"], line.lineno)
        elif text.lstrip().startswith(_TRIED):
            line.owned = line.figures_read = True

    def _continue(self, line: Line, text: str) -> None:
        found = self.open
        assert found is not None
        if "utotuning for function" in text:
            self.open = None  # a new printout: the one under way printed no choice
            self.feed(line)
            return
        found["left"] -= 1
        best = _BEST.search(text) if "best config selected: " in text else None
        if best is not None:
            line.owned = line.figures_read = True
            self._details(found, text[: best.start()])
            self._choice(found, best["cfg"], found["line"])
            self.open = None
            return
        if text.startswith(("with key as ", "finished after ")):
            line.owned = line.figures_read = True
            self._details(found, text)
        if found["left"] <= 0:
            self.open = None  # no choice printed after its head: nothing to record

    @staticmethod
    def _details(found: dict, text: str) -> None:
        seconds = _SECONDS.search(text)
        if seconds is not None:
            found["s"] = float(seconds["s"])
        key = _KEY.search(text)
        if key is not None:
            found["key"] = key["key"] if key["key"] is not None else key["inline"]

    def _choice(self, found: dict, config: str, lineno: int) -> None:
        if len(self.ev.out.autotune) >= AUTOTUNE_CAP:
            self.dropped += 1
            return
        self.ev.out.autotune.append(
            AutotuneChoice(
                function=found["fn"],
                config=read_config(config),
                key=found["key"],
                seconds=found["s"],
                source="output",
                line=lineno,
            )
        )

    def close(self) -> None:
        self.open = None
        if self.dropped:
            self.ev.note(f"autotune choices capped at {AUTOTUNE_CAP}; {self.dropped} more not kept")


RECOGNIZERS = (TritonAutotune,)
