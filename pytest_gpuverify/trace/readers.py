"""Readers of the traces' files into :class:`Launch` lists, by format: rocpd (rocprofv3's SQLite
database), nsys-sqlite (``nsys export --type sqlite``) and kineto-json (torch.profiler's Chrome trace).
Each opens the file read-only and raises :class:`TraceError` naming the file on anything unreadable."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

from pytest_gpuverify.trace.launches import Launch, TraceError

# rocpd's tables as rocprofv3 writes them (schema 3: timestamps in their own table, names in the
# kernel symbols); the unsuffixed names are the views it creates over its per-run tables
ROCPD_QUERY = """
SELECT S.kernel_name, S.display_name, K.grid_size_x, K.grid_size_y, K.grid_size_z,
       TS.value, TE.value, CO.uri
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
JOIN rocpd_timestamp TS ON TS.id = K.start_id AND TS.guid = K.guid
JOIN rocpd_timestamp TE ON TE.id = K.end_id AND TE.guid = K.guid
LEFT JOIN rocpd_info_code_object CO ON CO.id = S.code_object_id AND CO.guid = S.guid
ORDER BY TS.value
"""

NSYS_QUERY = """
SELECT COALESCE(N.value, D.value), K.gridX, K.gridY, K.gridZ, K.start, K."end"
FROM CUPTI_ACTIVITY_KIND_KERNEL K
LEFT JOIN StringIds N ON N.id = K.shortName
LEFT JOIN StringIds D ON D.id = K.demangledName
ORDER BY K.start
"""

FORMATS = ("rocpd", "nsys-sqlite", "kineto-json")


def read_trace(path: Path, fmt: str) -> list[Launch]:
    """The kernel launches in ``path``, in start order."""
    if fmt == "rocpd":
        return [
            Launch(display or name or "?", (int(x), int(y), int(z)), int(s), int(e), uri)
            for name, display, x, y, z, s, e, uri in _query(path, ROCPD_QUERY, "rocpd")
        ]
    if fmt == "nsys-sqlite":
        return [
            Launch(name or "?", (int(x), int(y), int(z)), int(s), int(e))
            for name, x, y, z, s, e in _query(path, NSYS_QUERY, "nsys's SQLite export")
        ]
    if fmt == "kineto-json":
        return _kineto(path)
    raise TraceError(f"{path.name}: no reader for the format {fmt!r} (known: {', '.join(FORMATS)})")


def _query(path: Path, query: str, what: str) -> list[tuple]:
    if not path.is_file():
        raise TraceError(f"{path.name}: no such file")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return con.execute(query).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise TraceError(f"{path.name} is not a readable {what} database ({exc})") from None


def _kineto(path: Path) -> list[Launch]:
    """Kineto's Chrome trace: ``traceEvents`` of category ``kernel``, ``ts``/``dur`` in microseconds."""
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":  # the stored trace is gzipped (torch_profile.py)
            data = gzip.decompress(data)
        events = json.loads(data.decode("utf-8")).get("traceEvents", [])
    except (OSError, ValueError, AttributeError, EOFError) as exc:
        raise TraceError(f"{path.name} is not a readable Kineto trace ({exc})") from None
    launches = []
    for ev in events if isinstance(events, list) else []:
        if not isinstance(ev, dict) or str(ev.get("cat", "")).lower() != "kernel" or ev.get("ph") != "X":
            continue
        try:
            start = round(float(ev["ts"]) * 1000)
            grid = tuple(int(g) for g in (ev.get("args") or {}).get("grid", ()))
            launches.append(Launch(str(ev.get("name", "?")), grid, start, start + round(float(ev["dur"]) * 1000)))
        except (KeyError, TypeError, ValueError):
            raise TraceError(f"{path.name}: a kernel event without a number in ts or dur: {ev}") from None
    return sorted(launches, key=lambda la: la.start_ns)
