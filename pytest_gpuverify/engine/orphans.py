"""Raw logs no artifact claims: what a run killed before it wrote its artifact (kill -9, a power
cut, pytest-timeout's ``os._exit``) leaves in the folder. They are listed, never removed: the
session after it, ``gpuverify check DIR`` and ``gpuverify handoff`` name them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import ValidationError

LOG_GLOBS = ("bench_*.log", "build_*.log")  # a target's raw output, a declared build's output
WHY = "a raw log no artifact names (a run stopped before it wrote its artifact)"


def claimed_logs(folder: Path) -> set[str]:
    """The names of the logs the folder's artifacts (current and moved aside) name."""
    from pytest_gpuverify.records.artifact import read_artifact

    names: set[str] = set()
    for path in folder.glob("bench_*.json"):
        try:
            art = read_artifact(path)
        except (OSError, ValueError, ValidationError):
            continue  # not an artifact, or a broken one: `check` says so
        names.update(Path(n).name for n in (art.raw_output, *(b.output for b in art.builds)) if n)
    return names


def orphan_logs(folder: Path, before: Optional[float] = None) -> list[Path]:
    """The logs in ``folder`` no artifact there names; ``before``: only those last written before
    this time (epoch seconds), so a running session's log is not taken for a dead one's."""
    if not folder.is_dir():
        return []
    claimed = claimed_logs(folder)
    found = []
    for pattern in LOG_GLOBS:
        for log in folder.glob(pattern):
            if log.name in claimed:
                continue
            try:
                if before is not None and log.stat().st_mtime >= before:
                    continue
            except OSError:
                continue
            found.append(log)
    return sorted(found)
