"""The commit graph as history reads it, from one git checkout: a ref's first-parent history (one
``git rev-list`` call, oldest first), which of it the head stands on, and the release tag below a
commit. Ancestry comes from those lists, never from one git call per commit.

A failure is a :class:`GraphError` whose message is one line naming the checkout or the commit and
the fix; callers fall back (history in run-time order) or refuse (compare's base)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pytest_gpuverify.place.gitstate import git, git_toplevel, run_git


class GraphError(Exception):
    """The graph cannot be read: no git, no checkout, an unknown ref or commit (one line, with the fix)."""


@dataclass(frozen=True)
class Line:
    """A ref's first-parent history in one checkout: the commits its tip was at, oldest first."""

    repo: Path
    ref: str
    shas: tuple[str, ...]
    _place: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._place.update((sha, i) for i, sha in enumerate(self.shas))

    def place(self, sha: str | None) -> int | None:
        """Where ``sha`` is on the line (0: the oldest), None when it is not on it."""
        return self._place.get(sha) if sha else None


@dataclass(frozen=True)
class Checkout:
    """One git checkout whose graph history reads."""

    top: Path

    def line(self, ref: str) -> Line:
        """``git rev-list --first-parent REF``, oldest first (read once per tip: a report asks per target)."""
        tip = (self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") or "").strip()
        shas = _first_parent(self.top, tip) if tip else None
        if shas is None:
            raise GraphError(
                f"{ref}: not a branch, tag or commit in the checkout at {self.top}. "
                "Fix: name one it has (--ref), or fetch it"
            )
        return Line(self.top, ref, shas)

    def knows(self, sha: str | None) -> bool:
        """Whether the checkout has the commit ``sha``."""
        return bool(sha) and self._git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}") is not None

    def not_below(self, line: Line, head: str) -> set[str]:
        """The commits of ``line`` that are not ``head`` nor its ancestors (descendants and commits of other
        histories): on a first-parent line these are the newest ones, so every older commit is an ancestor."""
        out = self._git("rev-list", "--first-parent", f"{line.ref}^{{commit}}", "--not", f"{head}^{{commit}}", "--")
        if out is None:
            raise GraphError(
                f"{head[:12]}: not a commit in the checkout at {self.top}. Fix: fetch it, or name "
                "the checkout that has it with --repo PATH"
            )
        return set(out.split())

    def release_below(self, head: str, pattern: str | None) -> tuple[str, str]:
        """The newest tag reachable from ``head``'s first parent (a tag on the head itself is the head's own
        commit, never its base), matching ``pattern`` (a glob) when given: (tag, its commit)."""
        match = ("--match", pattern) if pattern else ()
        tag = (self._git("describe", "--tags", "--abbrev=0", *match, f"{head}^") or "").strip()
        sha = (self._git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}") or "").strip() if tag else ""
        if not sha:
            like = f" matching {pattern}" if pattern else ""
            raise GraphError(
                f"no release tag{like} is reachable from {head[:12]}^ in the checkout at {self.top}. "
                "Fix: fetch the tags (git fetch --tags), name a pattern (--baseline release:'v*'), or "
                "use --baseline last-good"
            )
        return tag, sha

    def is_ancestor(self, older: str, newer: str) -> bool | None:
        """``git merge-base --is-ancestor``: None when git cannot tell (a commit it does not have)."""
        res = run_git(self.top, "merge-base", "--is-ancestor", older, newer)
        return {0: True, 1: False}.get(res.returncode) if res is not None else None

    def _git(self, *args: str) -> str | None:
        return git(self.top, *args)


@lru_cache(maxsize=16)
def _first_parent(top: Path, tip: str) -> tuple[str, ...] | None:
    out = git(top, "rev-list", "--first-parent", "--reverse", tip, "--")
    return tuple(out.split()) if out is not None else None


def checkout(folder: Path) -> Checkout:
    """The git checkout holding ``folder``; GraphError when git is missing or the folder is in none."""
    if shutil.which("git") is None:
        raise GraphError("git is not installed here: history cannot read the commit graph. Fix: install git")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise GraphError(f"{folder}: no such folder. Fix: name a git checkout with --repo PATH")
    top = git_toplevel(folder)
    if top is None:
        raise GraphError(
            f"{folder}: not in a git checkout. Fix: run in the checkout of the code, or name it with --repo PATH"
        )
    return Checkout(top)


def checkout_knowing(sha: str, folders: list[Path], what: str = "the head's commit") -> Checkout:
    """The first of ``folders``' checkouts that has the commit ``sha`` (``what``); GraphError naming what was tried."""
    tried: list[str] = []
    for folder in folders:
        try:
            found = checkout(folder)
        except GraphError as exc:
            tried.append(str(exc).split(". Fix:")[0])
            continue
        if found.knows(sha):
            return found
        tried.append(f"{found.top} has no commit {sha[:12]}")
    raise GraphError(
        f"no git checkout here has {what} {sha[:12]} ({'; '.join(tried) or 'none tried'}). "
        "Fix: run in the checkout of its repo, or name it with --repo PATH (git fetch it first)"
    )
