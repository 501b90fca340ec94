"""Correctness measures wherever a line prints them, and what they say, in every kind.

- **Measures** (:mod:`..reading.measures`): cosine_sim, max_abs_error, logits_diff, SNR; the worst of
  each is kept (``correctness``), a ``nan`` one is a failure.
- **Per-shape lines** (script kinds: ``M=128 N=4096: cosine_sim=0.9987, max_abs_error=2.3e-04``): a
  line with a measure is a shape when a limit applies to it: the declared ``cosine_sim_min``,
  ``max_abs_error_max``, ``logits_diff_max``, ``snr_db_min``, and, where no ``cosine_sim_min`` is
  declared, the default ``cosine_sim >= 0.99``. A verdict word on the line is read by the
  statements (``word-with-figure``): a ``FAIL`` fails the shape, a ``PASS`` never overrides a
  limit. A line with a measure but no limit and no word is only a measure; a summary (``All 8 tests
  passed``) is no shape. A maximum difference of exactly 0 is a passed check (the outputs are
  identical). An inner pytest's shapes are its tests: there a measure is only a measure.
- **NaN in the printed result**: ``nan``/``inf`` where the output shows the kernel's result
  (``output: nan``, ``out = tensor([nan, ...])``, a bare ``tensor([nan, ...])``, also over the
  lines of a tensor printed on several) is a NaN finding. A bare tensor counts only NaN (``-inf``
  is what an attention mask prints).
"""

from __future__ import annotations

import math
import re

from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.fold import Spelling, TriggerSpec, hs_key_value, key_value
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.measures import HIGHER_IS_BETTER, LineMeasures
from pytest_gpuverify.parsers.registry import MEASURES, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext

COSINE_DEFAULT = 0.99  # the default per-shape check (docs/artifacts.md, "Verdicts"): cosine_sim >= 0.99
SUMMARY = re.compile(r"\b(?:all\s+)?\d+\s+(?:tests?|shapes?|cases?|checks?)\s+(?:passed|failed)\b", re.I)
_LIMITS = (
    ("cosine_sim", "cosine_sim_min"),
    ("max_abs_error", "max_abs_error_max"),
    ("logits_diff", "logits_diff_max"),
    ("snr_db", "snr_db_min"),
)
# ``output: nan`` / ``out = tensor([`` / ``triton_out: inf``: a label naming the result, then the value
_RESULT_VALUE = re.compile(
    r"(?P<label>[A-Za-z_][\w.]*(?: [A-Za-z_][\w.]*){0,2})\s*[:=]\s*"
    r"(?P<value>(?-i:tensor\()|[-+]?(?:nan|inf)\b)",
    re.I,
)
_RESULT_WORDS = {
    "out",
    "output",
    "outputs",
    "result",
    "results",
    "res",
    "actual",
    "got",
    "kernel",
    "triton",
    "hip",
    "ck",
    "asm",
    "flydsl",
    "gluon",
    "dst",
    "y",
    "c",
    "o",
}
_AFTER_LABEL = re.compile(r"[:=]\s*[-+]?(?:nan|inf)(?![\w.])", re.I)  # what _RESULT_VALUE needs, found fast
_NONFINITE = re.compile(r"(?<![\w.])[-+]?(?:nan|inf)(?![\w.])", re.I)
_NAN = re.compile(r"(?<![\w.])[-+]?nan(?![\w.])", re.I)
TENSOR_LINES_CAP = 64  # the lines of one printed tensor read for NaN

# What the measures need: a name, ``:``/``=``, a number (key_value), ``... between a and b is X``,
# torch's ``Greatest absolute difference``; a printed tensor or a ``:``/``=`` before ``nan``/``inf``.
# (``re.I`` reads a dotless or dotted I as ``i``: two non-ASCII bytes before ``nf`` may be ``inf``.)
_TENSOR = rb"tensor\("
_NAN_AFTER = rb"nan(?<=[: \x80+\-]nan)(?![a-z0-9_])"
_INF_AFTER = rb"inf(?<=[: \x80+\-]inf)(?![a-z0-9_])"


def _line(ascii_only: bool) -> tuple[bytes, ...]:
    found = (key_value(ascii_only), b"between", b"greatest", _TENSOR, _NAN_AFTER, _INF_AFTER)
    return found if ascii_only else (*found, rb"\x80\x80nf(?![a-z0-9_])")


def _hs(k: Spelling) -> list[bytes]:
    result = b"[:=]" + k.spu + b"*[-+]?(?:nan|inf" + (b"" if k.ascii else b"|" + k.u + b"{2}nf") + b")"
    return [*hs_key_value(k), b"between", b"greatest", rb"tensor\(", result]


TRIGGERS = TriggerSpec(line=_line, hs=_hs, name="measures")


# A sentence's first words are no shape (``The max_abs_error: 0.97``, ``Our maximum absolute error is``)
_SENTENCE_START = re.compile(r"^(?:(?:the|a|an|this|that|our|its|their|final|overall)\s+)+", re.I)


def shape_label(before: str) -> str:
    """What a line printed before its first measure, as the shape it names (``M=128 N=4096``,
    ``gemm M=1``); "" where that is nothing, or the start of a sentence (``The``)."""
    label = before.strip().rstrip(":,;-|=").strip()
    return _SENTENCE_START.sub("", label + " ").strip()


class Measures(RecognizerBase):
    name = "measures"
    stage = MEASURES
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.limits = context.thresholds
        self.shape_lines = not ev.inside_tests
        self._tensor: tuple[int, int, bool] | None = None  # an open tensor: (line, depth, nan only)

    def wants_every_line(self) -> bool:
        """A printed result tensor is open: its next line matters whatever it holds."""
        return self._tensor is not None

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        text = line.text
        if self._tensor is not None:
            self._tensor_line(line.lineno, text)
        elif "tensor(" in text or (("=" in text or ":" in text) and _AFTER_LABEL.search(text) is not None):
            self._result(line.lineno, text)
        if ":" in text or "=" in text or "etween" in text:
            read = self.ev.metrics.observe(line.lineno, text)
            if read is not None:
                line.measured = True
                line.label = shape_label(text[: read.start])
                if self.shape_lines:
                    self._shape(line.lineno, text, read)

    def _shape(self, lineno: int, text: str, read: LineMeasures) -> None:
        """A line with measures: a check of each limit that applies (see the module's docstring)."""
        if SUMMARY.search(text):
            return
        label = shape_label(text[: read.start])
        where = f"line {lineno}: {label}" if label else f"line {lineno}"
        if read.values.get("max_abs_error") == 0.0 and self.limits.max_abs_error_max is None:
            self.ev.reading(lineno, True)  # no difference at all: the outputs are identical
        for field, key in _LIMITS:
            value = read.values.get(field)
            declared = getattr(self.limits, key)
            limit = declared if declared is not None else COSINE_DEFAULT if field == "cosine_sim" else None
            if value is None or limit is None:
                continue
            if math.isnan(value):
                self.ev.mark(lineno, failed=True)  # the observer named it
                continue
            below = field in HIGHER_IS_BETTER
            if (below and value < limit) or (not below and value > limit):
                origin = "the declared limit" if declared is not None else "the default"
                self.ev.reading(
                    lineno,
                    False,
                    f"{where}: {field} {value:g} is {'below' if below else 'above'} {origin} {limit:g}",
                )
            else:
                self.ev.reading(lineno, True)

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

    def _tensor_line(self, lineno: int, text: str, shown: str | None = None) -> None:
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

    def _found(self, lineno: int, text: str, at: int | None = None) -> None:
        self.ev.nan_count += 1
        self.ev.mark(lineno, failed=True)
        where = f"line {lineno}" + (f" (value on line {at})" if at and at != lineno else "")
        said = text.strip()[:160]
        self.ev.fail(f"{where}: {NAN_ALARM}: {said}", fold=(NAN_ALARM, f"{where}: {said}"))


NAN_ALARM = "NaN/inf in the printed result"

RECOGNIZERS = (Measures,)
