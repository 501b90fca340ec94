"""The GPU host's side of ``--gpu-sync`` (run there over ssh, in the Hosts row's Python, by
remote/sync.py): what its checkout holds before a copy, and the copy's end.

``state <checkout>`` prints what the controller decides with: the files a sync may delete there
(remote/syncfiles.py), the host's own changes (each path ``git status`` names, with its sha256 now),
what the last sync wrote (its manifest, kept outside the checkout) and the session's umask.
``finish <checkout>`` reads the controller's decision on stdin: it deletes the files the local
checkout no longer has, narrows the copied files' modes to the umask, writes the new manifest and
prints what it removed. The host's tickets folder and scratch, build outputs and caches are never
listed, so never deleted."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.remote.syncfiles import excluded, inside, sha256_of, visible_files


class CheckoutState(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    visible: list[str] = []  # what a sync may delete there
    changes: dict[str, str | None] = {}  # path -> its sha256 now (None: deleted) for each change on the host
    manifest: dict[str, str] | None = None  # path -> sha256 the last sync wrote (None: no sync yet)
    umask: int = 0o022
    problem: str | None = None


class Finish(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    delete: list[str] = []
    manifest: dict[str, str] = {}


def manifest_path(top: Path, environ=os.environ) -> Path:
    """Where the last sync's manifest of ``top`` is kept: the user's state folder, never the checkout."""
    state = Path(environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "gpuverify" / "synced" / (hashlib.sha256(str(top).encode()).hexdigest()[:20] + ".json")


def protected_folders(top: Path) -> list[str]:
    """The plugin's own output folders of this host (its env file's tickets, the scratch) inside ``top``."""
    from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file
    from pytest_gpuverify.place.gitstate import own_output_dirs

    try:
        tickets = load_env_file(default_env_path(None, os.environ)).resources.tickets
    except (EnvFileError, OSError, ValueError):
        tickets = None
    return inside(top, own_output_dirs(tickets))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def checkout_state(top: Path) -> CheckoutState:
    from pytest_gpuverify.place.gitstate import status_paths

    top.mkdir(parents=True, exist_ok=True)  # a first copy into a new folder
    protected = protected_folders(top)
    visible = visible_files(top, protected)
    if visible is None:
        return CheckoutState(problem=f"git could not list the files of {top}")
    path = manifest_path(top)
    try:
        manifest = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        manifest = None
    if (top / ".git").exists():
        changed = status_paths(top)
        if changed is None:
            return CheckoutState(problem=f"git status failed in {top}")
    else:  # no git to say what changed: every file, and what the last sync wrote that is gone
        changed = [*visible, *(manifest or {})]
    changes = {p: sha256_of(top / p) for p in changed if not excluded(p, protected)}
    return CheckoutState(visible=visible, changes=changes, manifest=manifest, umask=_umask())


def _within(root: str, path: Path) -> bool:
    """``path`` (links resolved) is ``root`` or lies under it: a listed name never reaches outside the checkout."""
    real = os.path.realpath(path)
    return os.path.commonpath([root, real]) == root


def finish(top: Path, decision: Finish) -> list[str]:
    """Delete, narrow modes, write the manifest; the paths removed."""
    protected = protected_folders(top)
    root = os.path.realpath(top)
    removed = []
    for rel in decision.delete:
        full = top / rel
        if excluded(rel, protected) or not _within(root, full.parent) or not os.path.lexists(full):
            continue
        full.unlink()
        removed.append(rel)
        folder = full.parent
        while folder != top and _within(root, folder) and os.path.realpath(folder) != root:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                break
            folder = folder.parent
    mask = _umask()
    for rel in decision.manifest:
        full = top / rel
        try:
            mode = os.lstat(full).st_mode
        except OSError:
            continue
        if not os.path.islink(full) and mode & mask & 0o777:
            os.chmod(full, mode & 0o7777 & ~mask)
    path = manifest_path(top)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(decision.manifest))
    os.replace(temporary, path)
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("state", "finish"):
        print("usage: python -m pytest_gpuverify.remote.synchost state|finish <checkout>", file=sys.stderr)
        return 2
    top = Path(argv[1])
    if argv[0] == "state":
        print(checkout_state(top).model_dump_json())
    else:
        print(json.dumps({"removed": finish(top, Finish.model_validate_json(sys.stdin.read()))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
