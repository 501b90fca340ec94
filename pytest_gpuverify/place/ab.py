"""``--gpu-ab BASE``: the base side's checkout, a ``git worktree`` of BASE made for the session and
removed after it (also after a failure or Ctrl-C: :meth:`BaseWorktrees.remove_all` runs at the
session's close and at interpreter exit).

The worktree lies inside the head's checkout (``.gpuverify-ab/``), so the container that mounts the
checkout sees it at the matching path without a new mount; the folder is listed in the checkout's
``info/exclude`` so that it never makes the checkout look dirty. Each side's worktree path differs,
so caches.py gives each its own warm JIT cache.
"""

from __future__ import annotations

import atexit
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.place.gitstate import git, run_git

FOLDER = ".gpuverify-ab"
WORKTREE_TIMEOUT_S = 300  # `git worktree add` checks out a whole tree: a big repo on a slow disk takes minutes

AbError = UsageError  # the base cannot be checked out: the error names --gpu-ab, the ref and the fix


def base_commit(head: Path, ref: str) -> str:
    """The sha ``ref`` names in the checkout ``head``; a UsageError naming --gpu-ab when it names none."""
    sha = (git(head, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") or "").strip()
    if not sha:
        raise UsageError(
            "--gpu-ab",
            f"--gpu-ab {ref}: not a commit in {head}",
            "name a branch, tag or sha that `git rev-parse` knows there (e.g. --gpu-ab HEAD~1 or origin/main)",
        )
    return sha


@dataclass
class BaseWorktree:
    ref: str
    sha: str
    head: Path  # the head's checkout (git top level) on the host
    path: Path  # the base worktree on the host
    inside: dict = field(default_factory=dict)  # Place -> the worktree's path there (its mount)

    def container_path(self, head_in_container: str) -> str:
        return f"{head_in_container.rstrip('/')}/{self.path.relative_to(self.head).as_posix()}"


def _exclude(top: Path) -> None:
    """List the folder in the checkout's own ``info/exclude`` (never in a tracked file)."""
    rel = (git(top, "rev-parse", "--git-path", "info/exclude") or "").strip()
    if not rel:
        return
    exclude = Path(rel) if Path(rel).is_absolute() else top / rel
    line = f"/{FOLDER}/"
    text = exclude.read_text() if exclude.exists() else ""
    if line not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text(text + ("" if not text or text.endswith("\n") else "\n") + line + "\n")


class BaseWorktrees:
    """The session's base worktrees, one per head checkout, made on first use."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self._made: dict[Path, BaseWorktree] = {}
        self.removed: list[str] = []
        self.problems: list[str] = []
        atexit.register(self.remove_all)

    def for_checkout(self, head: Path) -> BaseWorktree:
        head = Path(head)
        if head in self._made:
            return self._made[head]
        sha = base_commit(head, self.ref)
        _exclude(head)
        path = head / FOLDER / f"base-{sha[:12]}-{uuid.uuid4().hex[:8]}"
        res = run_git(head, "worktree", "add", "--detach", str(path), sha, timeout_s=WORKTREE_TIMEOUT_S)
        if res is None or res.returncode != 0:
            said = (
                res.stderr.strip()[:300]
                if res is not None
                else f"git could not be run or did not finish within {WORKTREE_TIMEOUT_S} s"
            )
            raise UsageError(
                "--gpu-ab",
                f"--gpu-ab {self.ref}: `git worktree add` failed in {head}: {said}",
                "install git, `git worktree prune`, or free the disk",
            )
        self._made[head] = BaseWorktree(self.ref, sha, head, path)
        return self._made[head]

    def remove_all(self, remove_in_container=None) -> None:
        """Remove every worktree made; ``remove_in_container(path)`` deletes what the container's
        user wrote there (root-owned files the host user may not delete), before git forgets it."""
        for head, wt in list(self._made.items()):
            res = run_git(head, "worktree", "remove", "--force", str(wt.path), timeout_s=WORKTREE_TIMEOUT_S)
            if (res is None or res.returncode != 0) and wt.path.exists():
                if remove_in_container is not None:
                    remove_in_container(wt)
                shutil.rmtree(wt.path, ignore_errors=True)
            run_git(head, "worktree", "prune", timeout_s=WORKTREE_TIMEOUT_S)
            try:
                (head / FOLDER).rmdir()  # only when empty: another session's worktree stays
            except OSError:
                pass
            if wt.path.exists():
                self.problems.append(
                    f"base worktree {wt.path} could not be removed. Fix: "
                    f"`git -C {head} worktree remove --force {wt.path}`"
                )
            else:
                self.removed.append(str(wt.path))
            del self._made[head]
