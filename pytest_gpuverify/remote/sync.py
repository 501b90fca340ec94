"""``--gpu-sync``: code on the laptop and a copy on the GPU host. The local
checkout is copied with ``rsync`` over the host's ssh alias into its Repos row's path, before any
worker starts; what was copied is recorded so a reviewer knows what ran is what was committed:
the local commit, the local dirty paths, and the sha256 of the copied file list (each file's sha256
and path, as ``sha256sum`` prints them, sorted)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from pytest_gpuverify.records.artifact import SyncRecord
from pytest_gpuverify.config.envfile import EnvFile, HostRow, RepoRow
from pytest_gpuverify.place.gitstate import git_toplevel, repo_state
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.remote.preflight import ssh_base
from pytest_gpuverify.remote.sshmux import SharedSsh, run_ssh

# never copied: git's own folder, build outputs, caches (the host builds its own)
EXCLUDES = (".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache",
            ".ruff_cache", ".tox", ".nox", ".venv", ".benchmarks", ".cache")


def local_checkout(here: Path, env: EnvFile) -> tuple[Path, RepoRow]:
    """The git checkout holding ``here`` and the Repos row it is a copy of (by the checkout's folder
    name, or the only row)."""
    top = git_toplevel(here)
    if top is None:
        raise UsageError("--gpu-sync", f"--gpu-sync: {here} is not inside a git checkout", "run from your checkout")
    rows = [r for r in env.repos if r.path is not None]
    named = [r for r in rows if r.repo.casefold() == top.name.casefold()
             or (r.path is not None and r.path.name == top.name)]
    row = named[0] if len(named) == 1 else rows[0] if len(rows) == 1 else None
    if row is None:
        raise UsageError("--gpu-sync", f"--gpu-sync: no Repos row of {env.path} matches the checkout {top}",
                         f"name the row {top.name!r}, or run from a checkout folder named like its row")
    return top, row


def _excluded(rel_parts: tuple[str, ...]) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(part, pattern) for part in rel_parts for pattern in EXCLUDES)


def file_list(top: Path) -> list[str]:
    """``<sha256>  <path>`` of every file rsync copies, sorted by path."""
    lines = []
    for folder, dirs, files in os.walk(top):
        rel_dir = Path(folder).relative_to(top)
        dirs[:] = [d for d in dirs if not _excluded((*rel_dir.parts, d))]
        for name in files:
            rel = rel_dir / name
            if _excluded(rel.parts) or os.path.islink(Path(folder) / name):
                continue
            digest = hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()
            lines.append(f"{digest}  {rel.as_posix()}")
    return sorted(lines, key=lambda line: line.split("  ", 1)[1])


def sync_to(host: HostRow, row: RepoRow, top: Path, timeout_s: float, ssh_config: Optional[str],
            shared: Optional[SharedSsh] = None) -> None:
    shell = " ".join(ssh_base("", timeout_s, ssh_config, shared)[:-1])  # rsync adds the alias itself
    argv = ["rsync", "-a", "--delete", f"--timeout={max(30, int(6 * timeout_s))}", *(f"--exclude={p}" for p in EXCLUDES), "-e", shell,
            f"{top}/", f"{host.ssh_alias}:{row.path}/"]
    try:
        done = run_ssh(argv, timeout_s=None)  # a large checkout takes its time; rsync's --timeout bounds a stall
    except OSError as exc:
        raise UsageError("--gpu-sync", f"--gpu-sync: rsync could not run here ({exc})", "install rsync") from None
    if done.returncode != 0:
        said = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no message"])[-1]
        raise UsageError("--gpu-sync", f"--gpu-sync: rsync of {top} to {host.host}:{row.path} failed (exit "
                         f"{done.returncode}: {said[:200]})",
                         f"check that rsync is installed on {host.host} and the folder is writable")


def sync_checkout(here: Path, env: EnvFile, hosts: list[HostRow], timeout_s: float,
                  ssh_config: Optional[str], shared: Optional[SharedSsh] = None) -> SyncRecord:
    top, row = local_checkout(here, env)
    state = repo_state(top)
    listing = file_list(top)
    for host in hosts:
        sync_to(host, row, top, timeout_s, ssh_config, shared)
    return SyncRecord(
        local_path=str(top), repo=row.repo, host_path=str(row.path),
        local_sha=state.sha, dirty=bool(state.dirty), dirty_paths=state.dirty_paths,
        files=len(listing), files_sha256=hashlib.sha256(("\n".join(listing) + "\n").encode()).hexdigest(),
    )


def repo_qualified(args: list[str], positional: list[str], here: Path, top: Path, repo: str) -> list[str]:
    """Path arguments inside the local checkout as ``<repo>:<path in the repo>``: the worker finds
    them in the host's copy (remote/onhost.py), and xdist does not refuse a path that exists here."""
    out = list(args)
    for arg in positional or []:
        path, sep, rest = arg.partition("::")
        full = (here / path).resolve()
        if path and full.exists() and full.is_relative_to(top) and arg in out:
            out[out.index(arg)] = f"{repo}:{full.relative_to(top).as_posix()}" + sep + rest
    return out
