"""Where a target lives: its Repos row, its worktree on the host and in the container."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

from .envfile import EnvFile, RepoRow


class WorkspaceError(Exception):
    """The target cannot be placed in a container path. The message names the row and the fix."""


@dataclass(frozen=True)
class Workspace:
    repo: RepoRow
    wt_host: Path  # the worktree (git top level) on the host
    wt_container: str  # the same directory inside the container
    rel_target: PurePosixPath  # the target file relative to the worktree


def git_toplevel(path: Path) -> Optional[Path]:
    try:
        res = subprocess.run(
            ["git", "-C", str(path if path.is_dir() else path.parent), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = res.stdout.decode("utf-8", errors="replace").strip()
    return Path(top).resolve() if res.returncode == 0 and top else None


def locate(env: EnvFile, target_path: Path) -> Workspace:
    target_path = target_path.resolve()
    repo = env.repo_for_path(target_path)
    if repo is None or repo.path is None:
        raise WorkspaceError(
            f"{target_path} is not under any repo path of the Repos table in {env.path}. "
            "Fix: add a Repos row for its checkout"
        )
    if not repo.mount:
        raise WorkspaceError(
            f"Repos row {repo.repo} in {env.path} has no mount. Fix: write where {repo.path} is mounted in the container"
        )
    root = repo.path.resolve()
    top = git_toplevel(target_path)
    wt = top if top is not None and (top == root or root in top.parents) else root
    rel_wt = wt.relative_to(root)
    wt_container = str(PurePosixPath(repo.mount) / PurePosixPath(*rel_wt.parts)) if rel_wt.parts else repo.mount
    rel_target = PurePosixPath(*target_path.relative_to(wt).parts)
    return Workspace(repo, wt, wt_container.rstrip("/") or "/", rel_target)
