"""What a session reads of a place that holds while what it rests on holds, kept for the next sessions
of this user on this host: a container's facts (arch, versions, the variables it sets) and the import
check's answers (where a package imports from with a command's environment).

Each entry is found by a key made of everything its answer rests on, so a change of any of them finds
no entry and the fact is read again:

- a container's facts: its id and start time (a restarted or recreated container is read afresh);
- an import check: the place (a container's id and start time; on the host, the ``python3`` that runs
  the command and the folders it imports from, by their change times), the worktree's commit and its
  uncommitted files (names, sizes, change times), the package and the command's import environment.

One JSON file in the user's own folder (mode 0700, engine/files.private_folder), read and written under
a flock. A file that cannot be read or parsed is an empty cache (then rewritten), never an error: every
fact can be read again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_gpuverify.common.files import private_folder
from pytest_gpuverify.execute.base import Executor, Place
from pytest_gpuverify.execute.container import ContainerError
from pytest_gpuverify.place.gitstate import MAX_DIRTY_PATHS
from pytest_gpuverify.place.provenance import ContainerFacts, import_origin
from pytest_gpuverify.records.artifact import RepoRecord, Versions

CACHE_FILE = "place-facts.json"
MAX_ENTRIES = 512  # the oldest go first: a host's containers and worktrees, many sessions over


def cache_key(kind: str, *parts: Any) -> str:
    """One key from the parts an answer rests on (their JSON, hashed: the file holds no paths or env)."""
    text = json.dumps([kind, *parts], sort_keys=True, default=str)
    return f"{kind}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"


class FactsCache:
    """The file of cached facts; ``folder`` defaults to the user's own folder."""

    def __init__(self, folder: Path | None = None) -> None:
        self.path = (folder or private_folder().path) / CACHE_FILE
        self.lock_path = self.path.with_suffix(".lock")

    def get(self, key: str) -> dict | None:
        with self._locked(fcntl.LOCK_SH):
            entry = self._read().get(key)
        return entry.get("value") if isinstance(entry, dict) and isinstance(entry.get("value"), dict) else None

    def put(self, key: str, value: dict) -> None:
        """Keep ``value`` under ``key``; a folder that cannot be written keeps nothing (the next session reads again)."""
        try:
            with self._locked(fcntl.LOCK_EX):
                entries = self._read()
                entries[key] = {"value": value, "at": time.time()}
                if len(entries) > MAX_ENTRIES:
                    for old in sorted(entries, key=lambda k: entries[k].get("at", 0))[: len(entries) - MAX_ENTRIES]:
                        del entries[old]
                tmp = self.path.with_name(f".{CACHE_FILE}.{os.getpid()}")
                tmp.write_text(json.dumps(entries), encoding="utf-8")
                os.replace(tmp, self.path)
        except OSError:
            pass

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @contextmanager
    def _locked(self, how: int) -> Iterator[None]:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            yield  # no lock file: a read finds nothing, a write fails on its own
            return
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)


def container_identity(inspected: Mapping[str, Any]) -> list[str] | None:
    """A container as its facts rest on it: its id and its start time; None when either is missing."""
    started = (inspected.get("State") or {}).get("StartedAt")
    return [inspected["Id"], started] if inspected.get("Id") and started else None


def host_python_identity(path_env: str | None = None) -> list | None:
    """The host's ``python3`` as an import check on the host rests on it: the machine (its boot), the
    interpreter, and the change times of the folders it imports from. Known only when that ``python3``
    is the one running this process (its import folders are then this process's ``sys.path``): None
    otherwise, and the check runs every session."""
    found = shutil.which("python3", path=path_env if path_env is not None else os.environ.get("PATH"))
    if found is None or os.path.realpath(found) != os.path.realpath(sys.executable):
        return None
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    folders = []
    for entry in dict.fromkeys(p for p in sys.path if p):
        try:
            folders.append([entry, os.stat(entry).st_mtime_ns])
        except OSError:
            folders.append([entry, None])
    st = os.stat(os.path.realpath(sys.executable))
    return [socket.gethostname(), boot, os.path.realpath(sys.executable), st.st_mtime_ns, st.st_size, folders]


def worktree_identity(repo: RepoRecord) -> list | None:
    """A worktree as an import check rests on it: its commit and each uncommitted file's name, size and
    change time (an edit of an already dirty file changes the key too). None: no commit, a state git
    could not tell, or a list of uncommitted files that may be cut short."""
    if not repo.sha or repo.dirty is None or len(repo.dirty_paths) >= MAX_DIRTY_PATHS:
        return None
    files = []
    for rel in sorted(repo.dirty_paths):
        try:
            st = os.lstat(Path(repo.path) / rel)
            files.append([rel, st.st_size, st.st_mtime_ns])
        except OSError:
            files.append([rel, None, None])  # deleted: its absence is the state
    return [repo.path, repo.sha, files]


# -- reading through the cache ------------------------------------------------------------------
def place_identity(handle: Executor, env: Mapping[str, str]) -> list | None:
    """What an import check in ``handle`` rests on besides the worktree: a container's id and start,
    or the host's ``python3`` and the folders of the command's PYTHONPATH by their change times."""
    if handle.place.on_host:
        python = host_python_identity(env.get("PATH"))
        if python is None:
            return None
        folders = []
        for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
            try:
                folders.append([entry, os.stat(entry).st_mtime_ns])
            except OSError:
                folders.append([entry, None])
        return [python, folders]
    try:
        return container_identity(handle.inspect())
    except ContainerError:
        return None


def import_origin_across_sessions(
    cache: FactsCache,
    handle: Executor,
    package: str,
    env: Mapping[str, str],
    tree: RepoRecord | None,
    front: tuple[str, ...] = (),
) -> tuple[str | None, str | None, bool]:
    """(origin, why not importable, from an earlier session): provenance.import_origin, its answer kept
    for the next sessions while the place, the worktree (``tree``: its state before any command of
    ours), the package and the environment stay the same. Only an origin found is kept: a failed
    check is asked again."""
    place = place_identity(handle, env)
    worktree = worktree_identity(tree) if tree is not None else None
    key = (
        cache_key("import-origin", place, worktree, package, sorted(env.items()), *([list(front)] if front else []))
        if place and worktree
        else None
    )
    if key is not None:
        hit = cache.get(key)
        if hit is not None and isinstance(hit.get("origin"), str):
            return hit["origin"], None, True
    origin, why = import_origin(handle, package, env, front)
    if key is not None and origin is not None:
        cache.put(key, {"origin": origin})
    return origin, why, False


def cached_container_facts(cache: FactsCache, handle: Executor, vendor: str) -> ContainerFacts | None:
    """A container's facts as an earlier session read them, when it has not been restarted or
    recreated since; None: read them (provenance.read_container_facts), then :func:`remember_facts`."""
    try:
        identity = container_identity(handle.inspect(refresh=True)) if not handle.place.on_host else None
    except ContainerError:
        return None
    hit = cache.get(cache_key("container-facts", identity, vendor)) if identity else None
    if hit is None:
        return None
    try:
        versions = Versions.model_validate(hit["versions"])
        facts = ContainerFacts(
            handle,
            arch=hit["arch"],
            container_env=dict(hit["container_env"]),
            pythonpath=str(hit["pythonpath"]),
            identity=identity,
            cached=True,
        )
    except (KeyError, TypeError, ValueError):
        return None  # an entry of another shape: read afresh
    facts.keep_versions(versions, [str(gap) for gap in hit.get("gaps", [])])
    return facts


def remember_facts(cache: FactsCache, facts: ContainerFacts, vendor: str) -> None:
    """Keep a container's facts read in full this session (arch, versions) for the next sessions."""
    if facts.cached or facts.identity is None or facts.arch is None or facts.arch_problem:
        return
    versions, gaps = facts.versions_read(wait=False)
    if any(
        not gap.endswith(f"not installed in {facts.handle.name}") and "no /opt/rocm/.info/version" not in gap
        for gap in gaps
    ):
        return  # a read that failed or did not end: the next session reads again
    cache.put(
        cache_key("container-facts", facts.identity, vendor),
        {
            "arch": facts.arch,
            "container_env": facts.container_env,
            "pythonpath": facts.pythonpath,
            "versions": versions.model_dump(),
            "gaps": gaps,
        },
    )


def kept_note(where: Place, facts: bool, packages: list[str]) -> str:
    """Which checks of the place were an earlier session's answers (facts_cache.py), and what they rest on."""
    what = ([f"the facts of {where} (arch, versions: the same container start)"] if facts else []) + (
        [f"the import check of {', '.join(packages)} (the same place, commit and uncommitted files)"]
        if packages
        else []
    )
    return f"kept from an earlier session: {'; '.join(what)}"
