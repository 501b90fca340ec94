"""Checks a run prints besides aiter's ``[checkAllclose ...]`` lines and an inner pytest's outcomes
(the verdict lines harnesses print, declared words included, are printout.py's).

- **Per-shape lines** (``M=128 N=4096: cosine_sim=0.9987, max_abs_error=2.3e-04 PASS``,
  also ``logits_diff``, SNR): each is a shape, checked against the declared limits
  (``cosine_sim_min``, ``max_abs_error_max``, ``logits_diff_max``, ``snr_db_min``) and, where no
  ``cosine_sim_min`` is declared, against the default ``cosine_sim >= 0.99`` (the README's per-shape rule). A ``PASS``/``FAIL``
  word printed on the line is that shape's own outcome (a ``FAIL`` fails; a ``PASS`` never
  overrides a limit). A line with a measure but no limit and no word is only a measure. A summary
  (``All 8 tests passed``) is not a shape. Read by the script kinds (aiter op_tests, bench): an inner
  pytest's outcomes come from its JUnit report.
- **NaN in the printed result**: ``nan``/``inf`` where the output shows the kernel's result
  (``output: nan``, ``out = tensor([nan, ...])``, a bare ``tensor([nan, ...])``, also over the
  lines of a tensor printed on several) is a NaN finding. A bare tensor counts only NaN (``-inf``
  is what an attention mask prints). Every kind.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Optional

from pytest_gpuverify.config.targets import Thresholds
from pytest_gpuverify.parsers.metrics import HIGHER_IS_BETTER, LineMeasures

COSINE_DEFAULT = 0.99  # the default per-shape check (README, Verdicts): cosine_sim >= 0.99
SUMMARY = re.compile(r"\b(?:all\s+)?\d+\s+(?:tests?|shapes?|cases?|checks?)\s+(?:passed|failed)\b", re.I)
_WORD = re.compile(r"(?<![\w-])(?:(?P<fail>FAIL(?:ED)?|[Ff]ailed)|(?P<pass>PASS(?:ED)?|[Pp]assed))(?![\w-])")
_LIMITS = (("cosine_sim", "cosine_sim_min"), ("max_abs_error", "max_abs_error_max"),
           ("logits_diff", "logits_diff_max"), ("snr_db", "snr_db_min"))
# ``output: nan`` / ``out = tensor([`` / ``triton_out: inf``: a label naming the result, then the value
_RESULT_VALUE = re.compile(r"(?P<label>[A-Za-z_][\w.]*(?: [A-Za-z_][\w.]*){0,2})\s*[:=]\s*"
                           r"(?P<value>(?-i:tensor\()|[-+]?(?:nan|inf)\b)", re.I)
_RESULT_WORDS = {"out", "output", "outputs", "result", "results", "res", "actual", "got", "kernel", "triton",
                 "hip", "ck", "asm", "flydsl", "gluon", "dst", "y", "c", "o"}
_AFTER_LABEL = re.compile(r"[:=]\s*[-+]?(?:nan|inf)(?![\w.])", re.I)  # what _RESULT_VALUE needs, found fast
_NONFINITE = re.compile(r"(?<![\w.])[-+]?(?:nan|inf)(?![\w.])", re.I)
_NAN = re.compile(r"(?<![\w.])[-+]?nan(?![\w.])", re.I)
TENSOR_LINES_CAP = 64  # the lines of one printed tensor read for NaN


class PrintedChecks:
    """Watches the lines a parser reads; records through the parser's ``fail``."""

    def __init__(self, fail: Callable[[str], None], limits: Optional[Thresholds] = None,
                 shape_lines: bool = True) -> None:
        self._fail = fail
        self.limits = limits or Thresholds()
        self.shape_lines = shape_lines
        self.shapes_passed = self.shapes_failed = 0
        self.nan_count = 0
        self.checked_line = 0  # the last line read as a check (its ``failed`` word is no unread one)
        self._tensor: Optional[tuple[int, int, bool]] = None  # an open tensor: (line, depth, nan only)

    @property
    def shapes(self) -> int:
        return self.shapes_passed + self.shapes_failed

    def wants_every_line(self) -> bool:
        """A printed result tensor is open: its next line matters whatever it holds."""
        return self._tensor is not None

    def feed(self, lineno: int, text: str) -> None:
        if self._tensor is not None:
            self._tensor_line(lineno, text)
        elif "tensor(" in text or (("=" in text or ":" in text) and _AFTER_LABEL.search(text) is not None):
            self._result(lineno, text)

    def measured(self, lineno: int, text: str, read: LineMeasures) -> None:
        """A line whose measures :class:`.metrics.MetricsObserver` read: a shape, when a limit or a
        printed word makes it a check."""
        if not self.shape_lines or SUMMARY.search(text):
            return
        label = text[: read.start].strip().rstrip(":,;-|=").strip() or f"line {lineno}"
        words = [m for m in _WORD.finditer(text)]  # before or after the measures: ``[FAIL] M=1: cos=...``
        word = next((m for m in words if m["fail"]), words[0] if words else None)
        failed = word is not None and word["fail"] is not None
        checked = word is not None
        if failed and word is not None:  # failed implies a word
            self._fail(f"line {lineno}: {label}: printed {word.group()}")
        for field, key in _LIMITS:
            value = read.values.get(field)
            declared = getattr(self.limits, key)
            limit = declared if declared is not None else COSINE_DEFAULT if field == "cosine_sim" else None
            if value is None or limit is None:
                continue
            checked = True
            if math.isnan(value):
                failed = True  # the observer reported it
                continue
            below = field in HIGHER_IS_BETTER
            if (below and value < limit) or (not below and value > limit):
                failed = True
                origin = "the declared limit" if declared is not None else "the default"
                self._fail(f"line {lineno}: {label}: {field} {value:g} is {'below' if below else 'above'} "
                           f"{origin} {limit:g}")
        if checked:
            self.checked_line = lineno
            if failed:
                self.shapes_failed += 1
            else:
                self.shapes_passed += 1

    def _result(self, lineno: int, text: str) -> None:
        for match in _RESULT_VALUE.finditer(text):
            words = set(re.split(r"[\s_.]+", match["label"].lower()))
            if not words & _RESULT_WORDS:
                continue
            if match["value"].lower().startswith("tensor"):
                self._open_tensor(lineno, text, match.end(), nan_only=False)
            else:
                self._found(lineno, text)
            return
        stripped = text.lstrip()
        if stripped.startswith("tensor("):
            self._open_tensor(lineno, text, len(text) - len(stripped) + 7, nan_only=True)

    def _open_tensor(self, lineno: int, text: str, start: int, nan_only: bool) -> None:
        self._tensor = (lineno, 1, nan_only)
        self._tensor_line(lineno, text[start:], shown=text)

    def _tensor_line(self, lineno: int, text: str, shown: Optional[str] = None) -> None:
        assert self._tensor is not None
        first, depth, nan_only = self._tensor
        end = len(text)
        if ")" not in text:
            depth += text.count("(")
        else:
            for i, ch in enumerate(text):
                depth += (ch == "(") - (ch == ")")
                if depth <= 0:
                    end = i
                    break
        if (_NAN if nan_only else _NONFINITE).search(text, 0, end):
            self._tensor = None
            self._found(first, shown or text, lineno)
            return
        self._tensor = (first, depth, nan_only) if depth > 0 and lineno - first < TENSOR_LINES_CAP else None

    def _found(self, lineno: int, text: str, at: Optional[int] = None) -> None:
        self.nan_count += 1
        where = f"line {lineno}" + (f" (value on line {at})" if at and at != lineno else "")
        self._fail(f"{where}: NaN/inf in the printed result: {text.strip()[:160]}")

