"""Which files of a checkout ``--gpu-sync`` copies, and which it may delete on the host: one rule for
both sides (remote/sync.py on the controller, remote/synchost.py on the host).

What git sees: tracked files and untracked files that are not ignored (``.gitignore``, the repo's
``info/exclude``, the user's excludes), never a gitignored ``.env`` or ``data/``; less build outputs
and caches, which each host makes its own, and the plugin's own output folders (the tickets
folder and the scratch, when they lie inside the checkout). A folder that is not a git checkout
has no ignore rules: all its files, less the same exclusions."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path

from pytest_gpuverify.place.gitstate import git

# never copied nor deleted: git's own folder, build outputs, caches, the test tools' droppings
EXCLUDES = (
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    ".benchmarks",
    ".cache",
    ".hypothesis",
    ".coverage",
    ".coverage.*",
)


def excluded(rel: str, protected: Iterable[str] = ()) -> bool:
    """``rel`` (a path in the checkout) is a build output or cache, or lies in a ``protected`` folder."""
    parts = Path(rel).parts
    if any(fnmatch(part, pattern) for part in parts for pattern in EXCLUDES):
        return True
    return any(rel == folder or rel.startswith(folder.rstrip("/") + "/") for folder in protected)


def inside(top: Path, folders: Iterable[Path | None]) -> list[str]:
    """The ``folders`` that lie inside the checkout ``top``, relative to it."""
    out = []
    for folder in folders:
        if folder is None:
            continue
        try:
            rel = Path(os.path.realpath(Path(folder).expanduser())).relative_to(os.path.realpath(top))
        except ValueError:
            continue
        if rel.parts:
            out.append(rel.as_posix())
    return out


def visible_files(top: Path, protected: Iterable[str] = ()) -> list[str] | None:
    """The files (and links) of the checkout ``top`` a sync copies, sorted; None when ``top`` is a git
    checkout whose listing git did not give."""
    protected = list(protected)
    if (top / ".git").exists():
        out = git(top, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if out is None:
            return None
        names = {n for n in out.split("\0") if n}
    else:
        names = set()
        for folder, dirs, files in os.walk(top):
            rel_dir = Path(folder).relative_to(top)
            dirs[:] = [d for d in dirs if not excluded((rel_dir / d).as_posix(), protected)]
            names.update((rel_dir / f).as_posix() for f in files)
    return sorted(
        n for n in names if not excluded(n, protected) and (os.path.islink(top / n) or os.path.isfile(top / n))
    )  # a deleted file, a submodule: no


def sha256_of(path: Path) -> str | None:
    """The file's sha256 (a link's: of its target's name); None when it is gone."""
    try:
        if os.path.islink(path):
            return hashlib.sha256(os.readlink(path).encode()).hexdigest()
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
