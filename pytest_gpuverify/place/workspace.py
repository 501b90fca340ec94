"""Where a target lives: its Repos row and its worktree on the host.

Where that worktree is inside the container is the container resolution's business (a ticket's
devcontainer may mount it elsewhere than the Repos row says): see :func:`container_path`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_gpuverify.config.envfile import EnvFile, RepoRow
from pytest_gpuverify.place.gitstate import git_toplevel


class WorkspaceError(Exception):
    """The target cannot be placed in a repo. The message names the row and the fix."""


@dataclass(frozen=True)
class Workspace:
    repo: RepoRow
    wt_host: Path  # the worktree (git top level) on the host
    rel_target: PurePosixPath | None  # the target file relative to the worktree


def locate(env: EnvFile, location: Path, repo_name: str | None = None, file: Path | None = None) -> Workspace:
    location = location.resolve()
    repo = env.repo(repo_name) if repo_name else env.repo_for_path(location)
    if repo_name and repo is None:
        raise WorkspaceError(f"repo {repo_name!r} is not in the Repos table of {env.path}. Fix: add a row for it")
    if repo is None or repo.path is None:
        raise WorkspaceError(
            f"{location} is not under any repo path of the Repos table in {env.path}. "
            "Fix: add a Repos row for its checkout"
        )
    root = repo.path.resolve()
    top = git_toplevel(location) if (location == root or root in location.parents) else None
    top = top.resolve() if top is not None else None  # compared with resolved paths below
    wt = top if top is not None and (top == root or root in top.parents) else root
    rel = None
    if file is not None:
        file = file.resolve()
        if not (file == wt or wt in file.parents):  # a folder target (kind pytest) may be the worktree
            raise WorkspaceError(f"{file} is not inside the worktree {wt}")
        rel = PurePosixPath(*file.relative_to(wt).parts) if file != wt else PurePosixPath(".")
    return Workspace(repo, wt, rel)


def kernel_repo_of(env: EnvFile, paths: Iterable[Path]) -> RepoRow | None:
    """The Repos row whose checkout holds every one of ``paths`` (a session's arguments), else None.
    Such a session only drives that repo's targets, whose conftest.py files belong to the repo's
    own pytest runs, inside its container."""
    rows = {id(row): row for row in (env.repo_for_path(path) for path in paths)}
    if len(rows) != 1:
        return None
    return next(iter(rows.values()))
