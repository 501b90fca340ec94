"""Printed words that make a run prove nothing, whatever its exit code, in every kind: an error line
or a traceback (a sweep that catches an exception per shape, prints it and exits 0), and what
shells, the C runtime and the GPU runtimes print when a process dies while the harness itself goes
on (``Killed``, ``Bus error``, ``double free or corruption``, ``*** stack smashing detected ***``,
``terminate called after throwing an instance of``, ROCm's ``aborting with error :
HSA_STATUS_ERROR_...``, ``GPU core dump created``, a caught ``HIP out of memory``). Each is a problem
(the verdict is at least INCONCLUSIVE) quoting the line, unless its line failed a check (then it
is that failure's). pytest's ``PytestUnhandledThreadExceptionWarning``/``PytestUnraisableExceptionWarning``
(an exception no test saw) are alarms too, also in pytest's warnings summary.

Benign look-alikes are not alarms: a measure named like an error (``max error: 0.01``,
``max_abs_error=1e-3``, an ``err`` column), prose (``may cause errors``).
"""

from __future__ import annotations

import re

from pytest_gpuverify.parsers.evidence import PRINTED_ERROR
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import FREE, Line
from pytest_gpuverify.parsers.registry import ALARMS, RecognizerBase

_NUMBER_AFTER = r"\s*(?:[-+]?(?:\d|\.\d)|nan\b|inf\b|n/a\b)"
# A Python exception's last line (``RuntimeError: HIP error: ...``, ``torch.OutOfMemoryError: ...``).
_EXCEPTION_LINE = re.compile(r"\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::|\s*$)")
# ``error: ...`` / ``Error: ...``; ``max error: 0.1`` is a measure, not an error line.
_ERROR_COLON = re.compile(rf"(?:^|[\s:\]])(?:error|Error|ERROR)\s*:(?!{_NUMBER_AFTER})")
# Read in the lower-cased line (substring tests: most lines are tested, few hold any).
CRASH_TEXTS = (
    "traceback (most recent call last)",
    "illegal memory access",
    "memory access fault",
    "segmentation fault",
    "core dumped",
    "fatal python error",
    "hip error",
    "hip_error",
    "hiperror",
    "cuda error",
    "cuda_error",
    "cudaerror",
    "hsa error",
    "hsa_error",
    "hsaerror",
    "hsa_status_error",
    "bus error",
    "floating point exception",
    "double free or corruption",
    "free(): invalid",
    "malloc(): ",
    "corrupted size vs",
    "stack smashing detected",
    "terminate called after throwing",
    "terminate called without",
    "gpu core dump",
    "out of memory",
    "illegal instruction",
    "device-side assert",
    "segfault",
    "page fault",
    "nccl error",
    "rccl error",
)
_KILLED = re.compile(
    r"(?<![\w-])Killed(?![\w-])|\b(?:was|been|got|[Pp]rocess|[Cc]hild|[Ww]orker)\s+killed\b"
    r"|\b(?i:oom)[- ]?(?i:kill)"
)
_PYTEST_WARNINGS = re.compile(r"\bPytest(?:UnhandledThreadException|UnraisableException)Warning\b")

# Each alarm holds one of these (lower-cased, as the folded chunk shows it); ``error`` before a ``:``
# or the line's end, or after hip/cuda/hsa; ``killed``.
WORDS = (
    b"exception",
    b"traceback",
    b"fault",
    b"illegal",
    b"dumped",
    b"abort",
    b"fatal",
    b"killed",
    b"oom",
    rb"free\(\)",
    b"malloc\\(\\)",
    b"corrupt",
    b"smashing",
    b"terminate called",
    b"core dump",
    b"out of memory",
    b"hsa_status",
    b"segfault",
    b"device-side",
)
_ERROR_RE = (
    rb"error(?:[ \x80]*+[:\n]|(?<=hiperror)|(?<=cudaerror)|(?<=hsaerror)"
    rb"|(?<=[ _]error)(?:(?<=hip.error)|(?<=cuda.error)|(?<=hsa.error)|(?<=bus.error)|(?<=nccl.error)"
    rb"|(?<=rccl.error)))",
)
HS_ERROR = (rb"error[ \t\x0b\x0c\r\x1c-\x1f\x80-\xff]*(?:[:=]|$)", rb"(?:hip|cuda|hsa|bus|nccl|rccl)[ _]?error")
TRIGGERS = TriggerSpec(line=lambda ascii_only: (*WORDS, *_ERROR_RE), hs=lambda k: (*WORDS, *HS_ERROR), name="alarms")


def is_error_line(text: str) -> bool:
    """An error line, a traceback's first line or a crash text (see the module's docstring for what is not)."""
    low = text.lower()
    if any(word in low for word in CRASH_TEXTS):
        return True
    stripped = text.lstrip()
    if stripped.startswith("Aborted") or ("ill" in low and _KILLED.search(text) is not None):
        return True
    if ("rror" in text or "xception" in text) and _EXCEPTION_LINE.match(text):
        return True
    return "error" in low and _ERROR_COLON.search(text) is not None


def may_alarm(text: str) -> bool:
    """A cheap superset of the lines :func:`is_error_line` reads (substring tests, no regex)."""
    return (
        "rror" in text
        or "RROR" in text
        or "fault" in text
        or "Traceback" in text
        or "xception" in text
        or "bort" in text
        or "llegal" in text
        or "dump" in text
        or "ill" in text
        or "ILL" in text
        or "free" in text
        or "orrupt" in text
        or "mashing" in text
        or "erminate" in text
        or "memory" in text
        or "MEMORY" in text
        or "egfault" in text
        or "assert" in text
        or "oom" in text
        or "OOM" in text
    )


class Alarms(RecognizerBase):
    name = "alarms"
    stage = ALARMS
    triggers = TRIGGERS

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        text = line.text
        if not may_alarm(text):
            return
        if "Warning" in text and "Pytest" in text and _PYTEST_WARNINGS.search(text):
            self.ev.unattached(line.lineno, "pytest caught an exception no test saw", text)
            return
        if line.where == FREE and is_error_line(text):
            self.ev.unattached(line.lineno, PRINTED_ERROR, text)


RECOGNIZERS = (Alarms,)
