"""The step fit's results remembered per row, in the user's cache folder
(``$XDG_CACHE_HOME/gpuverify/step-fits.sqlite``, else ``~/.cache/gpuverify/``; ``$GPUVERIFY_STEP_CACHE``
names another file, ``off`` turns it off). A row's steps are known by a digest of everything they
follow from: the row's per-commit values and direction, the compare rule, and the source of the code
that finds them (steps.py, compare/core.py, common/stats.py), so a changed rule or release never reads
an old answer. It lives outside the store because readers open the store read-only: any reader may
fill the cache, and a cache that cannot be used (a read-only home, a busy file) is skipped, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

ENV = "GPUVERIFY_STEP_CACHE"
MOST_KEPT = 20000  # rows' fits kept; the oldest written go first
_state: dict[str, object] = {}
_stamps: dict[tuple, str] = {}


def cache_file() -> Path | None:
    named = os.environ.get(ENV)
    if named:
        return None if named == "off" else Path(named).expanduser()
    root = os.environ.get("XDG_CACHE_HOME") or (
        os.path.expanduser("~/.cache") if os.path.expanduser("~") != "~" else ""
    )
    return Path(root) / "gpuverify" / "step-fits.sqlite" if root else None


def _code_stamp(sources: tuple[str, ...]) -> str:
    """A digest of the source files named (read once a process)."""
    key = ("stamp", sources)
    if key not in _stamps:
        digest = hashlib.sha256()
        for source in sources:
            digest.update(Path(source).read_bytes())
        _stamps[key] = digest.hexdigest()
    return _stamps[key]


def _connection() -> sqlite3.Connection | None:
    path = cache_file()
    if path is None:
        return None
    if _state.get("path") != path:
        _state["path"], _state["conn"] = path, None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            made = sqlite3.connect(str(path), timeout=0.2, isolation_level=None)
            made.execute("PRAGMA journal_mode = WAL")
            made.execute("PRAGMA synchronous = NORMAL")  # a cache: a fit lost at a power cut is fit again
            made.execute("CREATE TABLE IF NOT EXISTS fits (digest TEXT PRIMARY KEY, steps TEXT NOT NULL)")
            _state["conn"] = made
        except (sqlite3.Error, OSError):
            pass
    conn = _state.get("conn")
    return conn if isinstance(conn, sqlite3.Connection) else None


def digest_of(values: list[float], direction: str | None, rule: object, sources: tuple[str, ...]) -> str:
    """The key of a row's fit: its values, direction and rule, and the code that fits (``sources``: files)."""
    text = json.dumps([_code_stamp(sources), direction, repr(rule), values])
    return hashlib.sha256(text.encode()).hexdigest()


def remembered(digest: str, compute: Callable[[], list]) -> list:
    """The JSON-able result stored under ``digest``; else ``compute()``'s, stored."""
    conn = _connection()
    if conn is not None:
        try:
            found = conn.execute("SELECT steps FROM fits WHERE digest = ?", (digest,)).fetchone()
            if found is not None:
                return list(json.loads(found[0]))
        except (sqlite3.Error, ValueError):
            conn = None
    result = compute()
    if conn is not None:
        try:
            cur = conn.execute("INSERT OR IGNORE INTO fits (digest, steps) VALUES (?, ?)", (digest, json.dumps(result)))
            if cur.lastrowid and cur.lastrowid % 1000 == 0:
                conn.execute("DELETE FROM fits WHERE rowid <= ?", (cur.lastrowid - MOST_KEPT,))
        except sqlite3.Error:
            pass
    return result
