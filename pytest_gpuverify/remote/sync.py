"""``--gpu-sync``: code on the laptop and a copy on the GPU host. Before any worker starts, the local
checkout's files as git sees them (remote/syncfiles.py) are copied with ``rsync`` over the host's ssh
alias into the host's own checkout of its Repos row (the path the host's env file gives).

Nothing of the host's is lost without a word: a change in the host's checkout that no earlier sync
made (an edit, a new file: remote/synchost.py compares with the last sync's manifest)
stops the run naming the files, unless ``--gpu-sync-overwrite``; files the local checkout no longer
has are deleted there and listed; the host's tickets folder, scratch, build outputs and caches are
never touched; copied files get modes no wider than the host session's umask.

What was copied is recorded so a reviewer knows what ran is what was committed: the local commit, the
local dirty paths, the sha256 of the copied file list (each file's sha256 and path, as ``sha256sum``
prints them, sorted), the gitignored files copied because the run named them, what was removed and
which of the host's own changes were replaced."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from pathlib import Path

from pytest_gpuverify.config.envfile import EnvFile, HostRow, RepoRow
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.place.gitstate import git_toplevel, own_output_dirs, repo_state
from pytest_gpuverify.records.artifact import SyncRecord
from pytest_gpuverify.remote.preflight import python_of, ssh_base
from pytest_gpuverify.remote.sshmux import SharedSsh, run_ssh
from pytest_gpuverify.remote.syncfiles import excluded, inside, sha256_of, visible_files
from pytest_gpuverify.remote.synchost import CheckoutState, Finish

OVERWRITE_OPTION = "--gpu-sync-overwrite"
MAX_LISTED = 500  # paths kept per list in the record
SHOWN = 10  # paths named in a message


def local_checkout(here: Path, env: EnvFile) -> tuple[Path, RepoRow]:
    """The git checkout holding ``here`` and the Repos row it is a copy of (by the checkout's folder
    name, or the only row)."""
    top = git_toplevel(here)
    if top is None:
        raise UsageError("--gpu-sync", f"--gpu-sync: {here} is not inside a git checkout", "run from your checkout")
    rows = [r for r in env.repos if r.path is not None]
    named = [
        r for r in rows if r.repo.casefold() == top.name.casefold() or (r.path is not None and r.path.name == top.name)
    ]
    row = named[0] if len(named) == 1 else rows[0] if len(rows) == 1 else None
    if row is None:
        raise UsageError(
            "--gpu-sync",
            f"--gpu-sync: no Repos row of {env.path} matches the checkout {top}",
            f"name the row {top.name!r}, or run from a checkout folder named like its row",
        )
    return top, row


def file_list(top: Path, files: list[str] | None = None) -> list[str]:
    """``<sha256>  <path>`` of every file the sync copies (default: what git sees), sorted by path."""
    names = visible_files(top) if files is None else files
    return [f"{sha256_of(top / name)}  {name}" for name in sorted(names or [])]


def asked_ignored(asked: list[str], here: Path, top: Path, visible: set[str], own: list[str]) -> list[str]:
    """The files under the run's path arguments that git ignores (or a folder of them): copied all the
    same, since the run names them, and recorded."""
    found: set[str] = set()
    for arg in asked:
        path = arg.split("::", 1)[0]
        full = (here / path).resolve() if path else None
        if full is None or not full.exists() or not full.is_relative_to(top.resolve()):
            continue
        files = [full] if full.is_file() else [Path(d) / f for d, _, fs in os.walk(full) for f in fs]
        for file in files:
            rel = file.relative_to(top.resolve()).as_posix()
            if rel not in visible and not excluded(rel, own):
                found.add(rel)
    return sorted(found)


def _shown(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def _on_host(
    host: HostRow, command: str, timeout_s: float, ssh_config: str | None, shared: SharedSsh | None, stdin: bytes = b""
) -> str:
    """The last line ``python -m pytest_gpuverify.remote.synchost <command>`` printed on ``host``."""
    import subprocess

    alias = host.ssh_alias or host.host
    line = f"{shlex.quote(python_of(host))} -m pytest_gpuverify.remote.synchost {command}"
    try:
        done = run_ssh([*ssh_base(alias, timeout_s, ssh_config, shared), line], 6 * timeout_s + 60, stdin)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(
            "--gpu-sync",
            f"--gpu-sync: host {host.host} did not answer ({type(exc).__name__})",
            "check the host is up and `ssh <alias> hostname` answers",
        ) from None
    lines = done.stdout.decode("utf-8", errors="replace").strip().splitlines()
    if done.returncode != 0 or not lines:
        said = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no message"])[-1]
        raise UsageError(
            "--gpu-sync",
            f"--gpu-sync: reading the checkout on host {host.host} failed (exit {done.returncode}: {said[:200]})",
            f"check `ssh {alias} {line}` there",
        )
    return lines[-1]


def _copy(
    host: HostRow,
    top: Path,
    host_path: str,
    files: list[str],
    timeout_s: float,
    ssh_config: str | None,
    shared: SharedSsh | None,
) -> None:
    """rsync of exactly ``files``: links as links, times kept, modes from the host's umask (no ``-p``)."""
    shell = " ".join(ssh_base("", timeout_s, ssh_config, shared)[:-1])  # rsync adds the alias itself
    with tempfile.NamedTemporaryFile(prefix="gpuverify-sync-", suffix=".list") as listing:
        listing.write(b"\0".join(name.encode() for name in files))
        listing.flush()
        argv = [
            "rsync",
            "-lt",
            "--executability",
            "--from0",
            f"--files-from={listing.name}",
            f"--timeout={max(30, int(6 * timeout_s))}",
            "-e",
            shell,
            f"{top}/",
            f"{host.ssh_alias}:{host_path}/",
        ]
        try:
            done = run_ssh(argv, timeout_s=None)  # a large checkout takes its time; rsync's --timeout bounds a stall
        except OSError as exc:
            raise UsageError("--gpu-sync", f"--gpu-sync: rsync could not run here ({exc})", "install rsync") from None
    if done.returncode != 0:
        said = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no message"])[-1]
        raise UsageError(
            "--gpu-sync",
            f"--gpu-sync: rsync of {top} to {host.host}:{host_path} failed (exit {done.returncode}: {said[:200]})",
            f"check that rsync is installed on {host.host} and the folder is writable",
        )


def host_changes(state: CheckoutState, copying: dict[str, str]) -> list[str]:
    """The changes in the host's checkout that no earlier sync made and this one would lose: a file
    whose content is neither what the last sync wrote nor what this one brings (a file deleted there
    loses nothing when it comes back)."""
    last = state.manifest or {}
    return sorted(
        p for p, sha in state.changes.items() if sha is not None and sha != last.get(p) and sha != copying.get(p)
    )


def sync_checkout(
    here: Path,
    env: EnvFile,
    hosts: list[HostRow],
    host_paths: dict[str, str | None],
    timeout_s: float,
    ssh_config: str | None,
    shared: SharedSsh | None = None,
    overwrite: bool = False,
    asked: list[str] | None = None,
) -> dict[str, SyncRecord]:
    """Copy to each host (``host_paths``: host -> its own checkout of the row, else the env file's);
    the record of each. Every host's checkout is read before anything is copied anywhere."""
    top, row = local_checkout(here, env)
    own = inside(top, own_output_dirs(env.resources.tickets))
    visible = visible_files(top, own)
    if visible is None:
        raise UsageError("--gpu-sync", f"--gpu-sync: git could not list the files of {top}", "check `git status` there")
    ignored = asked_ignored(asked or [], here, top, set(visible), own)
    files = sorted(visible + ignored)
    listing = file_list(top, files)
    copying = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in listing}
    state = repo_state(top, own_output_dirs(env.resources.tickets))
    plans = []
    for host in hosts:
        host_path = host_paths.get(host.host) or str(row.path)
        found = CheckoutState.model_validate_json(
            _on_host(host, f"state {shlex.quote(host_path)}", timeout_s, ssh_config, shared)
        )
        if found.problem:
            raise UsageError("--gpu-sync", f"--gpu-sync: host {host.host}: {found.problem}", "check `git status` there")
        theirs = host_changes(found, copying)
        if theirs and not overwrite:
            alias = host.ssh_alias or host.host
            raise UsageError(
                "--gpu-sync",
                f"--gpu-sync: the checkout {host.host}:{host_path} has changes no earlier "
                f"sync made, which this one would replace or delete: {_shown(theirs)}",
                f"commit or remove them there (`ssh {alias} git -C {host_path} status`), or pass "
                f"{OVERWRITE_OPTION} to replace them",
            )
        plans.append((host, host_path, found, theirs))
    records = {}
    for host, host_path, found, theirs in plans:
        _copy(host, top, host_path, files, timeout_s, ssh_config, shared)
        decision = Finish(delete=[p for p in found.visible if p not in copying], manifest=copying)
        said = _on_host(
            host, f"finish {shlex.quote(host_path)}", timeout_s, ssh_config, shared, decision.model_dump_json().encode()
        )
        removed = json.loads(said).get("removed", [])
        records[host.host] = SyncRecord(
            local_path=str(top),
            repo=row.repo,
            host_path=host_path,
            local_sha=state.sha,
            dirty=bool(state.dirty),
            dirty_paths=state.dirty_paths,
            files=len(listing),
            files_sha256=hashlib.sha256(("\n".join(listing) + "\n").encode()).hexdigest(),
            ignored_copied=ignored[:MAX_LISTED],
            removed=removed[:MAX_LISTED],
            replaced=theirs[:MAX_LISTED],
        )
    return records


def sync_lines(records: dict[str, SyncRecord]) -> list[str]:
    """What the summary says of each host's copy beyond the copy itself."""
    lines = []
    for host, record in records.items():
        if record.removed:
            lines.append(
                f"--gpu-sync removed {len(record.removed)} file(s) on {host} that the local checkout no "
                f"longer has: {_shown(record.removed)}"
            )
        if record.replaced:
            lines.append(
                f"--gpu-sync replaced {len(record.replaced)} change(s) made on {host} ({OVERWRITE_OPTION}): "
                f"{_shown(record.replaced)}"
            )
        if record.ignored_copied:
            lines.append(
                f"--gpu-sync copied {len(record.ignored_copied)} gitignored file(s) to {host} because the run "
                f"names them: {_shown(record.ignored_copied)}"
            )
    return lines


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
