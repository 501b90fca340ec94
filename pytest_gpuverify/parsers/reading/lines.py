"""Reading saved command output as text: a streaming line reader, text cleaners (ANSI codes, CI
timestamps), and printed numbers.

Saved outputs can be hundreds of MB, sometimes one giant line without a newline, sometimes not
valid UTF-8. The reader reads fixed-size binary chunks, so memory stays bounded by the chunk size
plus the longest line it keeps (``max_line`` bytes); longer lines are cut and reported, never held.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

MIB = 1 << 20
DEFAULT_MAX_LINE = MIB
READ_CHUNK = MIB
TRUNCATION_RECORD_CAP = 100  # keep the first few cut-line numbers; the count keeps going

# Erasing the line (``\x1b[2K``, ``\x1b[K``) and moving the cursor to its first column (``\x1b[0G``,
# ``\x1b[G``, ``\x1b[1G``) start a new piece of what a terminal shows, as ``\r`` does: read as ``\r`` so
# ``FAILED\x1b[2K\x1b[0GPASSED`` is the pieces ``FAILED`` and ``PASSED``, never ``FAILEDPASSED``.
_ERASE = re.compile(r"\x1b\[[012]?K|\x1b\[[01]?G")
# CSI (colours, cursor moves), OSC (window titles, links) and the two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# GitHub Actions log lines start with an ISO timestamp; a BOM may sit before the first one.
_CI_PREFIX = re.compile(r"^\ufeff?\d{4}-\d{2}-\d{2}T[\d:.]+Z ")

TruncationCallback = Callable[[int, int], None]  # (lineno, full length of the line in bytes)


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (``\\x1b[32m`` and kin), an erase-line or a move to the first
    column read as the ``\\r`` it acts as; cheap when there are none."""
    if "\x1b" not in text:
        return text
    return _ANSI.sub("", _ERASE.sub("\r", text))


def strip_ci_prefix(text: str) -> str:
    """Remove a GitHub Actions ``2026-01-02T03:04:05.1234567Z `` timestamp prefix, if present."""
    return _CI_PREFIX.sub("", text, count=1)


def describe_size(n_bytes: int) -> str:
    if n_bytes % MIB == 0:
        return f"{n_bytes // MIB} MiB"
    if n_bytes % 1024 == 0:
        return f"{n_bytes // 1024} KiB"
    return f"{n_bytes} bytes"


class LineReader:
    """Iterate ``(lineno, text)`` over a file, 1-based, keeping counts the caller may report.

    ``bytes_read`` and ``lines_read`` grow while iterating. A line longer than ``max_line`` bytes is
    read in its ``\\r``-ended pieces (``split`` counts such lines, ``split_lines`` holds the first
    with their full lengths); a piece still longer is cut to ``max_line`` and the rest of it skipped
    (``truncated`` counts those lines, ``truncated_lines`` holds the first).
    """

    def __init__(
        self,
        path: str | Path,
        max_line: int = DEFAULT_MAX_LINE,
        on_truncate: TruncationCallback | None = None,
        chunk_size: int = READ_CHUNK,
    ) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.path = Path(path)
        self.max_line = max_line
        self.on_truncate = on_truncate
        self.chunk_size = max(1, chunk_size)
        self.bytes_read = 0
        self.lines_read = 0
        self.truncated = 0
        self.truncated_lines: list[tuple[int, int]] = []
        self.split = 0  # lines longer than max_line read in ``\\r`` pieces (none of them cut)
        self.split_lines: list[tuple[int, int]] = []
        self._split = self._cut = self._skipping = False  # the current line's state

    def __iter__(self) -> Iterator[tuple[int, str]]:
        max_line = self.max_line
        # A line that starts and ends inside one chunk is no longer than the chunk; when that is
        # within max_line, the chunk's inner lines are decoded in one call and split as text.
        pending = bytearray()  # the current line (or its last \r piece) so far, kept to max_line bytes
        pending_len = 0  # the current line's full length, including any bytes skipped
        with open(self.path, "rb") as fh:
            while True:
                chunk = fh.read(self.chunk_size)
                if not chunk:
                    break
                self.bytes_read += len(chunk)
                first = chunk.find(b"\n")
                if first < 0:
                    pending_len = yield from self._take(pending, pending_len, chunk)
                    continue
                if pending_len == 0 and first <= max_line:  # the common case: no copy into pending
                    yield self._emit(chunk[:first], first)
                else:
                    pending_len = yield from self._take(pending, pending_len, chunk[:first])
                    yield from self._end(bytes(pending), pending_len)
                    pending.clear()
                    pending_len = 0
                last = chunk.rfind(b"\n")
                if last > first:
                    yield from self._inner_lines(chunk, first + 1, last + 1)
                pending_len = yield from self._take(pending, pending_len, chunk[last + 1 :])
        if pending_len:
            yield from self._end(bytes(pending), pending_len)

    def _inner_lines(self, chunk: bytes, start: int, end: int) -> Iterator[tuple[int, str]]:
        """The whole lines of ``chunk[start:end]`` (each ends with a newline, the chunk's first line
        and its unfinished last one are not among them). Subclasses choose which to hand over."""
        if self.chunk_size <= self.max_line:
            return self._emit_block(chunk[start : end - 1])
        return self._each_line(chunk[start : end - 1].split(b"\n"))

    def _each_line(self, lines: list[bytes]) -> Iterator[tuple[int, str]]:
        for line in lines:
            if len(line) <= self.max_line:
                yield self._emit(line, len(line))
            else:
                pending = bytearray()
                full_len = yield from self._take(pending, 0, line)
                yield from self._end(bytes(pending), full_len)

    def _emit_block(self, block: bytes) -> Iterator[tuple[int, str]]:
        """Lines known to be shorter than max_line: one decode, one split."""
        text = block.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if "\r" in text:
            lines = [line.rstrip("\r") if line.endswith("\r") else line for line in lines]
        start = self.lines_read + 1
        self.lines_read += len(lines)
        return zip(range(start, start + len(lines)), lines)

    def _take(self, pending: bytearray, pending_len: int, piece: bytes) -> Generator[tuple[int, str], None, int]:
        """Add ``piece`` to the current line; return its full length so far. A line too long to keep
        whole (tqdm's ``\\r`` progress with no newline) is read in pieces: each piece ended by a
        ``\\r`` goes to the parser under the line's number, so nothing printed after the progress is
        lost. A piece itself longer than max_line is cut (its first max_line bytes are kept and
        ``truncated`` counts the line); the reading resumes at the next ``\\r``."""
        full_len = pending_len + len(piece)
        if self._skipping:
            cr = piece.find(b"\r")
            if cr < 0:
                return full_len
            self._skipping, self._split = False, True
            yield self._piece(bytes(pending))  # the cut piece
            pending.clear()
            piece = piece[cr + 1 :]
        pending += piece
        while len(pending) > self.max_line:
            cr = pending.rfind(b"\r")
            if cr < 0:
                del pending[self.max_line :]
                self._cut = self._skipping = True
                break
            self._split = True
            for part in bytes(pending[:cr]).split(b"\r"):
                if len(part) > self.max_line:
                    part, self._cut = part[: self.max_line], True
                yield self._piece(part)
            del pending[: cr + 1]
        return full_len

    def _end(self, raw: bytes, full_len: int) -> Iterator[tuple[int, str]]:
        """The line's last part; a line read in pieces gets its last ones split at ``\\r`` too."""
        if self._split and b"\r" in raw.rstrip(b"\r"):
            *parts, raw = raw.split(b"\r")
            for part in parts:
                yield self._piece(part)
        yield self._emit(raw, full_len)

    def _piece(self, raw: bytes) -> tuple[int, str]:
        """A ``\\r``-ended piece of a long line: the line's number, not yet counted as read."""
        return self.lines_read + 1, raw.decode("utf-8", errors="replace")

    def _emit(self, raw: bytes, full_len: int) -> tuple[int, str]:
        self.lines_read += 1
        lineno = self.lines_read
        if self._split:
            self.split += 1
            if len(self.split_lines) < TRUNCATION_RECORD_CAP:
                self.split_lines.append((lineno, full_len))
        if self._cut or (full_len > self.max_line and not self._split):
            self.truncated += 1
            if len(self.truncated_lines) < TRUNCATION_RECORD_CAP:
                self.truncated_lines.append((lineno, full_len))
            if self.on_truncate is not None:
                self.on_truncate(lineno, full_len)
        self._split = self._cut = self._skipping = False
        text = raw.decode("utf-8", errors="replace")
        if text.endswith("\r"):
            text = text.rstrip("\r")
        return lineno, text


def iter_lines(
    path: str | Path,
    max_line: int = DEFAULT_MAX_LINE,
    on_truncate: TruncationCallback | None = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(lineno, text)`` for each line of ``path``; see :class:`LineReader` for the limits."""
    return iter(LineReader(path, max_line=max_line, on_truncate=on_truncate))


# A printed number, as the parsers' regexes read it (NaN and inf included: they are findings).
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"

EMPTY_CELLS = ("", "None", "none", "-")  # what pandas/tabulate print for a missing value


def read_number(text: str) -> tuple[str, float | None]:
    """Read a printed cell: ``("empty"|"nan"|"inf"|"num"|"bad", value)``; value only for "num"."""
    if text in EMPTY_CELLS:
        return "empty", None
    try:
        value = float(text)
    except ValueError:
        return "bad", None
    if math.isnan(value):
        return "nan", None
    if math.isinf(value):
        return "inf", None
    return "num", value
