"""The prefilter's fast engine: Hyperscan (Intel's multi-pattern regex library, SIMD) finds the
candidate lines of a chunk in one pass, where Python's ``re`` needs one pass per expression and a
case-folding copy of the chunk first.

A parser's Hyperscan patterns (see :mod:`.triggers`) are plain expressions over the chunk with its
ANSI escapes removed, matched caseless and multi-line (``^`` is a line start); each must end on a
fixed token, since Hyperscan reports every end of a match and a trailing ``[^\\n]*`` would report
every byte. Only the end of a match is used: its line is a candidate.

``available()`` is false where the ``hyperscan`` wheel is missing (a platform without one); the
prefilter then uses the ``re`` expressions, which find the same lines more slowly.

Compiling the patterns is the costly part of a first reading (~0.2 s a set), so a compiled set is
kept in the user's cache folder (``$XDG_CACHE_HOME/gpuverify/hyperscan/``, else
``~/.cache/gpuverify/hyperscan/``) by Hyperscan's own serialisation, named by a digest of the
patterns, their flags and the library's version: a later process loads it in a millisecond. A file
that does not load is compiled again; a folder that cannot be written only costs the compile.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    import hyperscan as _hs
except ImportError:  # no wheel for this platform: the re engine does the work
    _hs = None  # type: ignore[assignment]  # None marks the re engine; every use checks `_hs is None` first

FLAGS = 0 if _hs is None else _hs.HS_FLAG_CASELESS | _hs.HS_FLAG_MULTILINE
CASED = 0 if _hs is None else _hs.HS_FLAG_MULTILINE


class Cased(bytes):
    """A pattern matched with its case (``OK`` as a status, not ``ok`` in a sentence)."""


def available() -> bool:
    return _hs is not None


class EngineFailed(Exception):
    """Hyperscan refused the patterns or the scan: the caller uses the re engine instead."""


class PatternSet:
    """A parser's patterns, compiled on first use in two sets: ``build(True)`` for a chunk of ASCII
    bytes, ``build(False)`` (with the rules for non-ASCII bytes) for any other."""

    def __init__(self, build: Callable[[bool], Sequence[bytes]]) -> None:
        self.build = build
        self._dbs: dict[bool, object] = {}

    def patterns(self, ascii: bool) -> list[bytes]:
        return list(self.build(ascii))

    def _compiled(self, ascii: bool):
        db = self._dbs.get(ascii)
        if db is None:
            patterns = self.patterns(ascii)
            flags = [CASED if isinstance(p, Cased) else FLAGS for p in patterns]
            expressions = [bytes(p) for p in patterns]
            kept = _cache_file(expressions, flags)
            db = _load(kept)
            if db is None:
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                try:
                    db.compile(
                        expressions=expressions, ids=list(range(len(patterns))), elements=len(patterns), flags=flags
                    )
                except _hs.error as exc:  # a pattern this Hyperscan build does not take
                    raise EngineFailed(f"hyperscan: {exc}") from None
                _keep(kept, db)
            self._dbs[ascii] = db
        return db

    def line_starts(self, text: bytes, start: int, end: int, limit: int) -> list[int] | None:
        """Start offsets (in ``text``) of the lines of ``text[start:end]`` holding a match
        (``start`` follows a newline, ``text[end - 1]`` is one); None when about every line holds
        one (handing every line over then costs less). Past ``limit`` matches the scan stops to
        check that, and goes on from the next line with the limit doubled when it is not so."""
        db = self._compiled(text.isascii())
        found: list[int] = []
        pos = start
        while pos < end:
            ends: list[int] = []
            add = ends.append

            def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> bool | None:
                add(to)  # noqa: B023 -- called only inside db.scan below, in this same iteration
                return len(ends) > limit or None  # noqa: B023 -- same; True stops the scan

            try:
                db.scan(memoryview(text)[pos:end], match_event_handler=on_match)
            except _hs.ScanTerminated:  # raised when on_match stopped the scan
                pass
            except _hs.error as exc:
                raise EngineFailed(f"hyperscan: {exc}") from None
            last = _lines_of(text, pos, end, sorted(ends), found)
            if len(ends) <= limit:
                return found
            if 2 * len(set(found)) > text.count(b"\n", start, last):
                return None
            pos, limit = last, limit * 2
        return found


def _lines_of(text: bytes, base: int, end: int, ends: list[int], found: list[int]) -> int:
    """Append to ``found`` the start of each line holding a match end (``ends``: sorted, relative
    to ``base``); return the offset after the last such line's newline."""
    rfind, find = text.rfind, text.find
    line_end = base - 1  # the newline of the line last added
    for to in ends:
        at = base + to  # the match's last byte is text[at - 1]; a `$` match stops before the newline
        if at - 1 <= line_end:
            continue  # a line already added
        found.append(rfind(b"\n", base, at - 1) + 1 or base)
        line_end = find(b"\n", at - 1, end)
        if line_end < 0:
            line_end = end - 1
    return line_end + 1


def _cache_file(expressions: list[bytes], flags: list[int]) -> Path | None:
    root = os.environ.get("XDG_CACHE_HOME") or (
        os.path.expanduser("~/.cache") if os.path.expanduser("~") != "~" else ""
    )
    if not root:
        return None
    digest = hashlib.sha256(repr((getattr(_hs, "__version__", ""), expressions, flags)).encode()).hexdigest()[:32]
    return Path(root) / "gpuverify" / "hyperscan" / f"{digest}.db"


def _load(path: Path | None):
    """A compiled set kept before, or None (none kept, or it does not load: compiled again)."""
    if path is None:
        return None
    try:
        db = _hs.loadb(path.read_bytes(), mode=_hs.HS_MODE_BLOCK)
        db.scratch = _hs.Scratch(db)  # a loaded set has none: a scan needs one
        return db
    except Exception:  # noqa: BLE001  # a missing, short or foreign file: the compile redoes it
        return None


def _keep(path: Path | None, db) -> None:
    """Write a compiled set atomically (a temporary file, then a rename); any failure costs only the cache."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(_hs.dumpb(db))
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001  # a read-only home, a full disk: the next process compiles again
        pass
