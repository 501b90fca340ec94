"""Skipping the lines a parser would do nothing with, without handing them to Python one by one.

A saved output is mostly noise (JIT builds, warnings, profiler lines); the recognizers read a few
lines of it. :class:`FilteredLineReader` reads the file in chunks like :class:`.lines.LineReader`, and in
each chunk a parser's :class:`Triggers` (a few compiled regexes, see :mod:`.triggers`) find, at C
speed, every line the parser might read: a *superset*, never a line less. Only those lines are
decoded and handed over; the newlines of the skipped spans are counted (``bytes.count``), so line
numbers stay exact. While the parser is inside a multi-line construct (a table, a tensor dump) its
``wants_every_line()`` says so and every line is handed over until the construct ends; in between,
skipped lines show as a jump in the line numbers.

The triggers run on a copy of the chunk with its ANSI escapes removed (so ``co\\x1b[0ms:`` reads as
``cos:``, as the parsers see it), translated by :data:`.triggers.FOLD` (lower case, ``=`` read as
``:``, whitespace as a space, every non-ASCII byte as ``\\x80``), so that a trigger never has to
spell out cases or Unicode. The first line of each chunk (it straddles the chunk boundary, and may
be a giant line cut by the reader) and the output's last line are always handed over.

Two engines find the candidates: Hyperscan (:mod:`.hsscan`: one SIMD pass over the chunk for all
of a parser's patterns, no folded copy) where its wheel is installed, else Python's ``re`` over the
folded copy. ``ENGINE = "re"`` forces the second.

``ENABLED = False`` turns the skipping off (every line is handed over); the tests use it to check
that both ways parse to the same result, and ``CHUNK_SIZE`` to put chunk boundaries everywhere.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.parsers.reading import hsscan
from pytest_gpuverify.parsers.reading.lines import DEFAULT_MAX_LINE, READ_CHUNK, LineReader, TruncationCallback

ENABLED = True
ENGINE = "hyperscan" if hsscan.available() else "re"
BATCH = 8192  # bytes of lines decoded at once when every line is handed over
SINGLE = 8  # lines handed over one by one once a recognizer wants every line, before batches: a title
#             or a header wants the next line or two, a table many
DENSE = 64  # a block with a candidate per this many bytes is checked for being half candidates
CHUNK_SIZE = READ_CHUNK  # tests make it small, to put chunk boundaries everywhere

# strip_ansi's expression over bytes, kept inside one line (the parsers strip a line at a time).
_ERASE = re.compile(rb"\x1b\[[012]?K|\x1b\[[01]?G")  # read as the \r it acts as (see lines.strip_ansi)
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*+[ -/]*+[@-~]|\][^\x07\x1b\n]*+(?:\x07|\x1b\\)?|[@-Z\\-_])")


Passes = tuple[tuple[re.Pattern[bytes], ...], tuple[re.Pattern[bytes], ...]]


@dataclass(frozen=True)
class Triggers:
    """Where a parser's lines may be, as regexes over a folded chunk (see :data:`.triggers.FOLD`).

    ``pick(folded, start, end)`` gives the regexes for one chunk (a chunk without non-ASCII bytes,
    say, needs no rule for them): ``line`` ones, where a match anywhere in a line makes that line a
    candidate, and ``next_line`` ones, which start with ``\\n`` and make the line after it one.
    """

    fold: bytes  # a bytes.translate table
    pick: Callable[[bytes, int, int], Passes]
    patterns: hsscan.PatternSet | None = None  # the same triggers for Hyperscan
    raw: tuple[re.Pattern[bytes], ...] = ()  # re engine: line triggers over the unfolded chunk (non-ASCII ones)
    cased: tuple[re.Pattern[bytes], ...] = ()  # re engine: line triggers over the unfolded chunk, any chunk

    def _find(self, text: bytes, start: int, end: int) -> list[int] | None:
        if self.patterns is not None and ENGINE == "hyperscan":
            try:
                return self.patterns.line_starts(text, start, end, (end - start) // DENSE + 64)
            except hsscan.EngineFailed:
                object.__setattr__(self, "patterns", None)  # the same lines, from the re engine from now on
        found = self._scan(text.translate(self.fold), start, end)
        if found is not None:
            for pattern in self.cased if text.isascii() else self.raw + self.cased:
                found += [text.rfind(b"\n", 0, m.start()) + 1 for m in pattern.finditer(text, start, end)]
        return found

    def candidates(self, chunk: bytes, start: int, end: int) -> list[int] | None:
        """Sorted start offsets (in ``chunk``) of the candidate lines among the whole lines of
        ``chunk[start:end]`` (``start`` follows a newline, ``chunk[end - 1]`` is one); None when
        about every line is one (then handing over every line costs less)."""
        if chunk.find(b"\x1b", start, end) < 0:
            found = self._find(chunk, start, end)
            return None if found is None else sorted(set(found))
        # Escapes removed, the lines shift: scan a stripped copy (its lines up to ``start`` are the
        # chunk's, as no newline is removed), then find the same lines in the chunk by number.
        stripped = _ANSI.sub(b"", _ERASE.sub(b"\r", chunk))
        s_start, s_end = stripped.find(b"\n") + 1, stripped.rfind(b"\n") + 1
        found = self._find(stripped, s_start, s_end)
        if found is None:
            return None
        esc = stripped.find(b"\x1b", s_start, s_end)
        while esc >= 0:  # an escape left by the one-pass strip: a second strip may join words
            found.append(stripped.rfind(b"\n", 0, esc) + 1)
            esc = stripped.find(b"\x1b", stripped.find(b"\n", esc), s_end)
        return _map_lines(sorted(set(found)), stripped, s_start, chunk, start)

    def _scan(self, folded: bytes, start: int, end: int) -> list[int] | None:
        line, next_line = self.pick(folded, start, end)
        found: list[int] = []
        check = (end - start) // DENSE + 64  # when to check the candidates are half the lines
        for pattern in line:
            for match in pattern.finditer(folded, start, end):
                found.append(folded.rfind(b"\n", 0, match.start()) + 1)
                if len(found) > check:
                    if 2 * len(set(found)) > folded.count(b"\n", start, match.start()):
                        return None
                    check *= 2
        for pattern in next_line:
            for match in pattern.finditer(folded, start - 1, end):
                if match.start() + 1 < end:  # not the newline that ends the block
                    found.append(match.start() + 1)
        if len(found) > (end - start) // DENSE and 2 * len(set(found)) > folded.count(b"\n", start, end):
            return None
        return found


def _map_lines(starts: list[int], stripped: bytes, s_start: int, chunk: bytes, start: int) -> list[int]:
    """Line starts in ``stripped`` -> the same lines' starts in ``chunk`` (``s_start`` and ``start``
    are one line's). A stripped span is never longer than its original, so the original's newlines
    over the stripped span's length are a lower bound of the count to pass; the rest are walked."""
    out: list[int] = []
    s_at, o_at = s_start, start  # the same line's start in both
    for s in starts:
        lines = stripped.count(b"\n", s_at, s)
        o = o_at + (s - s_at)
        seen = chunk.count(b"\n", o_at, o)
        while seen < lines:
            o = chunk.find(b"\n", o) + 1
            seen += 1
        out.append(o)
        s_at, o_at = s, o
    return out


class FilteredLineReader(LineReader):
    """:class:`.lines.LineReader` that hands over only the lines ``triggers`` find, and every line
    while ``wants_every_line()`` is true. ``lines_read`` and ``bytes_read`` count the whole file."""

    def __init__(
        self,
        path: str | Path,
        triggers: Triggers,
        wants_every_line: Callable[[], bool],
        max_line: int = DEFAULT_MAX_LINE,
        on_truncate: TruncationCallback | None = None,
        chunk_size: int = READ_CHUNK,
    ) -> None:
        super().__init__(path, max_line=max_line, on_truncate=on_truncate, chunk_size=chunk_size)
        self.triggers = triggers
        self.wants_every_line = wants_every_line
        # A line inside a chunk is then shorter than max_line: only a chunk's first line and the
        # last one can be cut, and those are always handed over.
        self.chunk_size = min(self.chunk_size, max_line)

    def _inner_lines(self, chunk: bytes, start: int, end: int) -> Iterator[tuple[int, str]]:
        """The whole lines of ``chunk[start:end]`` (each ends with a newline, none is cut).

        Lines go one by one (the candidates, and the first :data:`SINGLE` lines a recognizer wants
        whatever they hold) or in batches of about :data:`BATCH` bytes (while the
        parser wants every line, or the block is dense with candidates): a line handed over that
        need not be is only read by the parser for nothing. ``lines_read`` counts the block once it
        is done, or the whole block if the reading stops inside it, as :class:`.lines.LineReader`
        does."""
        wants = self.wants_every_line
        found: list[int] | None = None  # candidate line starts, found when first needed
        every = False  # the block is dense with candidates: every line goes
        streak = 0  # lines handed over in a row because a recognizer wanted them
        at = 0  # index into found
        base = lineno = self.lines_read
        pos = start
        done = False
        try:
            while pos < end:
                if every or wants():
                    streak += 1
                    stop = chunk.find(b"\n", min(pos + BATCH, end - 1) if every or streak > SINGLE else pos, end) + 1
                else:
                    streak = 0
                    if found is None:
                        found = self.triggers.candidates(chunk, start, end)
                        if found is None:
                            every = True
                            continue
                    at = bisect_left(found, pos, at)
                    if at == len(found):
                        lineno += chunk.count(b"\n", pos, end)
                        break
                    if found[at] > pos:
                        lineno += chunk.count(b"\n", pos, found[at])
                        pos = found[at]
                    stop = chunk.find(b"\n", pos, end) + 1
                text = chunk[pos : stop - 1].decode("utf-8", errors="replace")
                pos = stop
                for piece in text.split("\n"):
                    lineno += 1
                    yield lineno, piece.rstrip("\r") if piece.endswith("\r") else piece
            done = True
        finally:
            self.lines_read = lineno if done else base + chunk.count(b"\n", start, end)


def open_lines(path: str | Path, triggers: Triggers | None, wants_every_line: Callable[[], bool] | None) -> LineReader:
    """The reader a parser reads ``path`` with: filtered by ``triggers`` unless there are none or
    :data:`ENABLED` is off."""
    if triggers is None or wants_every_line is None or not ENABLED:
        return LineReader(path, chunk_size=CHUNK_SIZE)
    return FilteredLineReader(path, triggers, wants_every_line, chunk_size=CHUNK_SIZE)
