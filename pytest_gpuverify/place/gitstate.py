"""A checkout's state as git sees it: its SHA and what differs from it. One rule for the run and ``doctor``.

Dirty means any change to a tracked file, or any untracked file that is not the plugin's own output.
The plugin's own outputs are recognised by where it writes them (the tickets folder and the run's
scratch, when they lie inside the checkout), never by their names: a harness called ``bench_x.py``
is the repo's code, and an edit to it must show.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from pytest_gpuverify.config.targets import SCRATCH_ROOT
from pytest_gpuverify.records.artifact import RepoRecord

MAX_DIRTY_PATHS = 50


class GitResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_git(path: Path, *args: str, timeout_s: float = 30) -> GitResult | None:
    """``git -C path ARGS``: the package's one way to run git. None when git is missing, cannot be
    started or runs past ``timeout_s``; bytes that are not UTF-8 (a file name, a message) are replaced."""
    try:
        res = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return GitResult(
        res.returncode, res.stdout.decode("utf-8", errors="replace"), res.stderr.decode("utf-8", errors="replace")
    )


def git(path: Path, *args: str) -> str | None:
    """git's stdout, or None when git fails, hangs or is missing."""
    res = run_git(path, *args)
    return res.stdout if res is not None and res.returncode == 0 else None


def own_output_dirs(tickets: Path | None) -> list[Path]:
    """Where the plugin writes: the tickets folder (each ticket's artifacts and logs) and the scratch
    of runs on the host (``--gpu-container none``)."""
    return [p for p in (tickets, Path(SCRATCH_ROOT)) if p is not None]


# Untracked files that test tools leave in any checkout they run in (pytest-cov's data files, pytest's
# and Python's caches, hypothesis' and pytest-benchmark's folders): no change of the code under test.
# Tracked ones still count: a checkout that tracks its .coverage changed when it changed.
TOOL_DROPPINGS = (".coverage", ".coverage.*", "__pycache__/**", ".pytest_cache/**", ".hypothesis/**", ".benchmarks/**")


def changes(top: Path, own: Iterable[Path] = ()) -> list[tuple[str, str]] | None:
    """(status, path) of every change git sees in the checkout ``top``, as ``git status --porcelain``
    writes them, less the untracked files inside ``own`` folders and the tools' untracked droppings
    (:data:`TOOL_DROPPINGS`, in any folder); None when git cannot tell."""
    tracked = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=no")
    excluded = [f":(exclude,top,glob)**/{pattern}" for pattern in TOOL_DROPPINGS]
    for folder in own:
        rel = _inside(top, Path(folder).expanduser())
        if rel is not None:
            excluded.append(f":(exclude,top,literal){rel}")
    untracked = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--", ":(top)", *excluded)
    if tracked is None or untracked is None:
        return None
    found = _entries(tracked)
    found += [entry for entry in _entries(untracked) if entry[0] == "??"]
    return found


def status_paths(top: Path) -> list[str] | None:
    """Every path ``git status`` names in the checkout ``top``, each untracked file on its own (not
    its folder), ignored files left out; None when git cannot tell."""
    out = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    return [name for _, name in _entries(out)] if out is not None else None


def tracked_changes(path: Path) -> frozenset[str] | None:
    """The tracked files that differ from HEAD in the checkout holding ``path``; None when git cannot tell."""
    top = git_toplevel(path)
    out = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=no") if top is not None else None
    return frozenset(name for _, name in _entries(out)) if out is not None else None


def git_toplevel(path: Path) -> Path | None:
    """The top of the git checkout holding ``path`` (a file or a folder), or None."""
    top = (git(path if path.is_dir() else path.parent, "rev-parse", "--show-toplevel") or "").strip()
    return Path(top) if top else None


def repo_state(path: Path, own: Iterable[Path] = ()) -> RepoRecord:
    """SHA and dirtiness of the checkout that holds ``path`` (git on the host)."""
    top = git_toplevel(path)
    if top is None:
        return RepoRecord(path=str(path))
    sha = (git(path, "rev-parse", "HEAD") or "").strip() or None
    found = changes(top, own)
    if found is None:  # git answered rev-parse but not status: the state is unknown, not clean
        return RepoRecord(path=str(top), sha=sha)
    paths = [name for _, name in found]
    return RepoRecord(path=str(top), sha=sha, dirty=bool(paths), dirty_paths=paths[:MAX_DIRTY_PATHS])


def _entries(porcelain: str) -> list[tuple[str, str]]:
    """``git status --porcelain=v1 -z`` records; a rename's second (old) name is skipped."""
    fields = porcelain.split("\0")
    out, i = [], 0
    while i < len(fields):
        record = fields[i]
        i += 1
        if len(record) < 4:
            continue
        code = record[:2]
        out.append((code, record[3:]))
        if "R" in code or "C" in code:
            i += 1  # the name it was renamed or copied from
    return out


def _inside(top: Path, folder: Path) -> str | None:
    """``folder`` relative to ``top`` when it lies strictly inside it (never the checkout itself)."""
    try:
        rel = folder.resolve().relative_to(Path(top).resolve())
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None
