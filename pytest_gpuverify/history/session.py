"""A session's artifacts added to the history store at its end (``--gpu-history FILE`` / ini
``gpu_history``): the engine's half, without pytest. The artifacts are already written; a store that
cannot be used (damaged, read-only, locked past the busy timeout, a full disk) costs the history only,
and says so in one line: ``history not kept: <the file, what is wrong, the fix>``."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Iterable, Optional

from pytest_gpuverify.history.add import ADDED, KNOWN, REFUSED, add_files
from pytest_gpuverify.history.db import StoreError, connect, guard


def add_session_artifacts(store: Path, artifacts: Iterable[Path], ref: Optional[str] = None) -> tuple[list[str], bool]:
    """Lines for the terminal (what was added; a line per artifact refused), and whether any went wrong."""
    paths = [p for p in artifacts if p.is_file()]
    if not paths:
        return [], False
    try:
        with closing(connect(store)) as conn, guard(store):
            results = add_files(conn, paths, ref)
    except (StoreError, OSError) as exc:  # the session's own verdicts and exit status stand
        return [f"history not kept: {exc}"], True
    counts = {o: sum(r.outcome == o for r in results) for o in (ADDED, KNOWN, REFUSED)}
    lines = [f"history {store}: {counts[ADDED]} artifact(s) added, {counts[KNOWN]} already stored, "
             f"{counts[REFUSED]} refused"]
    return lines + [f"history: {r.line()}" for r in results if r.outcome == REFUSED], bool(counts[REFUSED])
