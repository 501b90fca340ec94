"""Printed words that make a run prove nothing, whatever its exit code: an error line or a traceback
(a sweep that catches an exception per shape, prints it and exits 0), and a ``failed`` word no
reader understood. Each is a problem (the verdict is at least INCONCLUSIVE) quoting the line.

Benign look-alikes are not alarms: a measure named like an error (``max error: 0.01``,
``max_abs_error=1e-3``, an ``err`` column), prose (``may cause errors``), a count of none
(``0 failed``, ``failed=0``) and a failure to do something optional (``failed to import X``).
"""

from __future__ import annotations

import re
from typing import Callable

ALARM_CAP = 20  # quoted one by one; the rest are counted in one closing line
QUOTE_CAP = 200

_NUMBER_AFTER = r"\s*(?:[-+]?(?:\d|\.\d)|nan\b|inf\b|n/a\b)"
# A Python exception's last line (``RuntimeError: HIP error: ...``, ``torch.OutOfMemoryError: ...``).
_EXCEPTION_LINE = re.compile(r"\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::|\s*$)")
# ``error: ...`` / ``Error: ...``; ``max error: 0.1`` is a measure, not an error line.
_ERROR_COLON = re.compile(rf"(?:^|[\s:\]])(?:error|Error|ERROR):(?!{_NUMBER_AFTER})")
# Read in the lower-cased line (substring tests: most lines are tested, few hold any).
_GPU_ERRORS = ("traceback (most recent call last)", "illegal memory access", "memory access fault",
               "segmentation fault", "core dumped", "fatal python error", "hip error", "hip_error", "hiperror",
               "cuda error", "cuda_error", "cudaerror", "hsa error", "hsa_error", "hsaerror")


def is_error_line(text: str) -> bool:
    """An error line or a traceback's first line (see the module's docstring for what is not)."""
    low = text.lower()
    if any(word in low for word in _GPU_ERRORS):
        return True
    if text.lstrip().startswith("Aborted"):
        return True
    if ("rror" in text or "xception" in text) and _EXCEPTION_LINE.match(text):
        return True
    return "error:" in low and _ERROR_COLON.search(text) is not None


_FAILED_WORD = re.compile(r"(?<![\w-])(?:failed|FAILED|Failed)(?![\w-])")
_BENIGN_FAILED = re.compile(
    r"(?<![\w.])0\s+(?:tests?\s+)?failed|failed\s*[:=]\s*0(?![\d.])|failed to (?!(?:match|pass|verify|converge)\b)",
    re.IGNORECASE,
)


def may_alarm(text: str) -> bool:
    """A cheap superset of the lines :class:`Alarms` reads (substring tests, no regex): each
    alarm holds one of these words."""
    return ("rror" in text or "RROR" in text or "ailed" in text or "AILED" in text or "fault" in text
            or "Traceback" in text or "xception" in text or "Aborted" in text or "llegal memory" in text
            or "dumped" in text)


class Alarms:
    """Watches lines for error lines and unread ``failed`` words; ``problem`` records each."""

    def __init__(self, problem: Callable[[str], None]) -> None:
        self._problem = problem
        self.seen = 0

    def observe(self, lineno: int, text: str, failed_read: bool = False) -> None:
        """``failed_read``: a reader took the line's ``failed`` as a check's outcome."""
        if not may_alarm(text):
            return
        if is_error_line(text):
            self.raise_alarm(lineno, "the run printed an error", text)
        elif (not failed_read and ("ailed" in text or "AILED" in text) and _FAILED_WORD.search(text)
              and not _all_benign(text)):
            self.raise_alarm(lineno, "'failed' printed where no check was read", text)

    def raise_alarm(self, lineno: int, what: str, text: str) -> None:
        self.seen += 1
        if self.seen <= ALARM_CAP:
            self._problem(f"line {lineno}: {what}: {text.strip()[:QUOTE_CAP]}")

    def close(self) -> None:
        if self.seen > ALARM_CAP:
            self._problem(f"{self.seen - ALARM_CAP} more error or 'failed' lines not listed")


def _all_benign(text: str) -> bool:
    """Every ``failed`` of the line is a benign one (``0 failed``, ``failed=0``, ``failed to import``)."""
    benign = [m.span() for m in _BENIGN_FAILED.finditer(text)]
    return all(any(b <= m.start() < e for b, e in benign) for m in _FAILED_WORD.finditer(text))
