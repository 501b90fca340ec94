"""Correctness measures read from a line: cosine_sim (>= 0.99 by default,
the documented additions to allclose), max_abs_error, and what aiter's test_common.py helpers print: logits_diff /
calc_diff, SNR in dB.

:class:`MetricsObserver` is fed every line by every parser. It keeps the worst value printed of
each measure: the MIN of cosine similarities and SNRs, the MAX of absolute errors and logits diffs.
A field stays None unless a value was printed; a ``nan`` value is counted and is a failure.

Names read (case-insensitive, followed by ``:`` or ``=`` and a number):

- cosine_sim: ``cosine_sim``, ``cos_sim``, ``cosine similarity``, ``cosine``, ``cos``, ``mincos``
- logits_diff: ``logits_diff``, ``Logits Diff``, ``cos_diff`` (FlyDSL's name for the same
  ``1 - 2*sum(x*y)/sum(x*x+y*y)`` measure, ``calc_diff``)
- max_abs_error: ``max_abs_error``, ``max abs error``, ``Max absolute error``, ``max_abs``, CK's ``max err``,
  ``Max Diff`` (FlyDSL ``verify_output``: ``abs(a-b).max()``), aiter's ``-->max abs delta:``, and
  torch ``assert_close``'s ``Greatest absolute difference: X at index ...``
- snr_db: ``snr``, ``snr_db``, ``SNR (dB)``, ``SNR: 31.2 dB``
- max_abs_error also: Triton's tutorials' ``The maximum difference between torch and triton is 0.0``
  (``max diff between A and B: X`` and kin: no ``:`` needed)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_gpuverify.records.artifact import Correctness

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf(?:inity)?"
_IS = rf"\s*[:=]\s*(?P<v>{_NUM})(?![\w.])"
_START = r"(?<![\w.])"

# (field, keep, gate word, pattern); the gate word must be in the lower-cased line for the
# pattern to run, which keeps the cost of a line without any of them to a few substring tests.
_PATTERNS: list[tuple[str, str, str, re.Pattern[str]]] = [
    (
        "cosine_sim",
        "min",
        "cos",
        re.compile(rf"{_START}(?:min[ _]?)?cos(?:ine)?(?:[ _]sim(?:ilarity)?|[ _]?similarity)?{_IS}", re.I),
    ),
    ("logits_diff", "max", "diff", re.compile(rf"{_START}(?:logits|cos)[ _]diff{_IS}", re.I)),
    (
        "max_abs_error",
        "max",
        "max",
        re.compile(
            rf"{_START}max(?:imum)?[ _](?:abs(?:olute)?(?:[ _](?:err(?:or)?|diff(?:erence)?))?|diff|err(?:or)?){_IS}",
            re.I,
        ),
    ),
    ("max_abs_error", "max", "greatest", re.compile(rf"{_START}greatest absolute difference{_IS}", re.I)),
    ("snr_db", "min", "snr", re.compile(rf"{_START}snr(?:[ _]?\(?db\)?)?{_IS}", re.I)),
    (
        "max_abs_error",
        "max",
        "between",
        re.compile(
            rf"{_START}max(?:imum)?(?:[ _]abs(?:olute)?)?[ _]diff(?:erence)?\s+between\s+[^:=\n]{{1,80}}?"
            rf"(?:\s+(?:is|was)|\s*[:=])\s*(?P<v>{_NUM})(?![\w.])",
            re.I,
        ),
    ),
]
# aiter's ``-->max abs delta:`` (``-->max delta:`` before 2025): its non-finite values are the aiter
# parser's to count, so here only a finite value is kept.
_AITER_DELTA = re.compile(rf"-->max (?:abs )?delta{_IS}")
_COS_GATE = re.compile(r"cos(?:ine|[ _:=])")  # not the "cos" of "cost 39.6s"


class MetricsObserver:
    """Watches lines for printed correctness measures; :meth:`apply` writes them into a Correctness."""

    def __init__(self, fail: Callable[[str], None] | None = None) -> None:
        self._fail = fail
        self.values: dict[str, float | None] = {
            "cosine_sim": None,
            "max_abs_error": None,
            "logits_diff": None,
            "snr_db": None,
        }
        self.nan_count = 0
        self.seen = 0  # how many values were read

    def observe(self, lineno: int, text: str) -> LineMeasures | None:
        """Read the measures of one line; returns what it read (None: nothing), for the per-shape rules."""
        if ":" not in text and "=" not in text and "etween" not in text:
            return None
        low = text.lower()
        if not ("cos" in low or "max" in low or "diff" in low or "snr" in low or "greatest" in low):
            return None
        if "-->max" in text:
            match = _AITER_DELTA.search(text)
            if match is not None:
                value = _finite(match["v"])
                if value is not None:
                    self.record("max_abs_error", value)
            return None
        read: LineMeasures | None = None
        for key, _keep, gate, pattern in _PATTERNS:
            if gate not in low or (gate == "cos" and not _COS_GATE.search(low)):
                continue
            for match in pattern.finditer(text):
                value = self.take(lineno, key, match["v"])
                read = read or LineMeasures(match.start(), {})
                read.start = min(read.start, match.start())
                read.values[key] = value if key not in read.values else _worse(key, read.values[key], value)
        return read

    def take(self, lineno: int, field: str, text: str) -> float:
        value = float(text)
        if math.isfinite(value):
            self.record(field, value)
            return value
        if field == "snr_db" and value > 0:
            return value  # identical outputs; not a number to compare against
        self.nan_count += 1
        if self._fail is not None:
            self._fail(f"line {lineno}: {field} is {text}")
        return value

    def record(self, field: str, value: float) -> None:
        """Keep ``value`` if it is the worst of its field so far (min or max by the field)."""
        self.seen += 1
        old = self.values[field]
        self.values[field] = value if old is None else _worse(field, old, value)

    def apply(self, correctness: Correctness) -> None:
        for key, value in self.values.items():
            if value is not None:
                setattr(correctness, key, value)
        correctness.nan_count += self.nan_count


def has_measure(text: str) -> bool:
    """Whether ``text`` prints a measure :class:`MetricsObserver` reads (nothing is recorded)."""
    low = text.lower()
    if "-->max" in text:
        return _AITER_DELTA.search(text) is not None
    return any(
        gate in low and (gate != "cos" or _COS_GATE.search(low)) and pattern.search(text)
        for _key, _keep, gate, pattern in _PATTERNS
    )


@dataclass
class LineMeasures:
    """The measures one line printed: where the first starts, and the worst value of each field."""

    start: int
    values: dict[str, float]


HIGHER_IS_BETTER = ("cosine_sim", "snr_db")


def _worse(field: str, old: float, new: float) -> float:
    if math.isnan(new) or math.isnan(old):
        return math.nan
    return min(old, new) if field in HIGHER_IS_BETTER else max(old, new)


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


# ----- torch ``assert_close`` failures (``Tensor-likes are not close!``) -------------------------

NOT_CLOSE = re.compile(r"AssertionError: (?:Tensor-likes|Scalars) are not (?:close|equal)!")
_MISMATCHED = re.compile(r"Mismatched elements: \d+ / \d+ \([^)]*\)")
_GREATEST = re.compile(r"Greatest (?:absolute|relative) difference: .*")


@dataclass
class CloseBlock:
    """One torch ``assert_close`` failure: its first line and the ``Mismatched``/``Greatest`` lines."""

    line: int
    parts: list[str] = field(default_factory=list)

    def feed(self, text: str) -> bool:
        match = _MISMATCHED.search(text) or _GREATEST.search(text)
        if match is None or len(self.parts) >= 4:
            return False
        self.parts.append(match.group().strip())
        return True

    def describe(self) -> str:
        kept = [p for p in self.parts if not p.startswith("Greatest relative")]
        return "; ".join(["AssertionError: Tensor-likes are not close!", *kept])


def block_from_message(message: str) -> CloseBlock | None:
    if not NOT_CLOSE.search(message):
        return None
    block = CloseBlock(0)
    for text in message.splitlines()[1:20]:
        block.feed(text)
    return block
