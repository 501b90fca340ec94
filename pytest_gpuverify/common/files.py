"""Files the plugin writes where other users and sessions also work: ticket folders, artifacts, logs.

One mode for every result file (:data:`RESULT_MODE`, 0644: what a teammate needs to read it; who may
reach it at all is the ticket folder's business). A new ticket folder takes the permissions of the
folder it is made in (its group-write and setgid bits included), whatever the creating member's umask,
so a folder shared by a team keeps working for every member; in a group-writable folder it is also
setgid and of that folder's group, so what any member writes in it stays the team's. A folder every local user may write in
(``/tmp``, a team scratch of mode 1777) must have the sticky bit, and a folder made in it keeps it:
without it any local user could delete or replace another's artifacts, logs and signatures
(:func:`open_folder_problem`). A file the plugin cannot write is one line naming it, its owner and
mode, and the fix (:func:`unwritable`).
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

RESULT_MODE = 0o644  # artifacts, raw logs, JUnit reports: owner writes, everyone who reaches the folder reads
FOLDER_BITS = 0o3777  # what a new ticket folder copies from its parent: rwx for all, setgid and sticky


class FileProblem(OSError):
    """A file or folder the plugin cannot write. ``str()`` is one line with the owner, mode and fix."""


def owner_and_mode(path: Path) -> str:
    """``owner alice, mode 0644`` (``missing`` when it does not exist)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = f"uid {st.st_uid}"
    return f"owner {owner}, mode {stat.S_IMODE(st.st_mode):04o}"


def unwritable(path: Path, why: str, fix: str | None = None) -> FileProblem:
    """The one-line error for ``path``: what it is, whose, its mode, and the fix."""
    path = Path(path)
    me = _user()
    fix = fix or (
        f"make it writable for {me} (e.g. `chmod g+w` with a group {me} is in), "
        "or point the env file's tickets row elsewhere"
    )
    return FileProblem(f"cannot write {path} ({owner_and_mode(path)}): {why}. Fix: {fix}")


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def check_writable_dir(path: Path) -> None:
    """Raise :class:`FileProblem` unless ``path`` is, or can be made as, a folder this user writes in.
    Creates nothing: the first existing folder on the way up decides."""
    path = Path(path).expanduser()
    probe = path
    while not probe.exists() and not probe.is_symlink():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if not probe.is_dir():
        raise unwritable(
            probe, "it is a file, not a folder", "remove or rename it, or point the env file's tickets row at a folder"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        why = "read-only file system" if _read_only_fs(probe) else "no write permission"
        raise unwritable(probe, why)


def output_file_problem(path: Path) -> tuple[str, str] | None:
    """(what is wrong, the fix) when a file the user named for output (``-o FILE``, the CI summary)
    cannot be written: a folder, a missing folder, no permission. None when it can. Creates nothing."""
    folder = path.parent
    if path.is_dir():
        return f"{path} is a folder", f"name a file in it, e.g. {path / 'gpuverify.out'}"
    if not folder.is_dir():
        return f"folder {folder} does not exist", f"`mkdir -p {folder}`, or name a file in an existing folder"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        where = path if path.exists() else folder
        return f"cannot write {where} ({owner_and_mode(where)})", "name a file you can write"
    return None


def result_folder(tickets: Path | None, ticket: str | None, cwd: Path) -> tuple[Path, Path | None]:
    """(the folder a session's artifacts go to, the lock of the artifact moves in it), after
    :func:`check_writable_dir`. With a ticket: ``<tickets>/<KEY>`` and the tickets folder's lock,
    shared by the team and every session writing any ticket there; else the cwd and this user's own."""
    if ticket and tickets is not None:
        root = Path(tickets).expanduser()
        folder, lock = root / ticket, root / ".gpuverify.lock"
        for shared in (root, folder):
            problem = open_folder_problem(shared)
            if problem is not None:
                raise problem
    else:
        folder, lock = Path(cwd), private_folder().path / "artifacts.lock"
    check_writable_dir(folder)
    return folder, lock


def open_folder_problem(path: Path) -> FileProblem | None:
    """A folder every local user may write in, without the sticky bit: anyone could delete or replace
    another user's artifacts, logs and signatures in it. None when it is safe (or does not exist)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not stat.S_ISDIR(mode) or not mode & stat.S_IWOTH or mode & stat.S_ISVTX:
        return None
    return FileProblem(
        f"cannot write into {path} ({owner_and_mode(path)}): every local user may write in it "
        "but it lacks the sticky bit, so anyone could delete or replace another user's artifacts. "
        f"Fix: `chmod +t {path}` (its owner or root), or `chmod o-w {path}` for a team's group folder"
    )


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def make_dirs(path: Path) -> None:
    """``mkdir -p`` where each new folder gets its parent's permission bits (:data:`FOLDER_BITS`),
    set explicitly since the umask would strip them. Folders that exist are left as they are."""
    path = Path(path)
    if path.is_dir():
        return
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            continue  # another session made it a moment ago: theirs, left as it is
        except OSError as exc:
            raise unwritable(folder.parent, exc.strerror or str(exc)) from exc
        try:
            parent = os.stat(folder.parent)
            mode = stat.S_IMODE(parent.st_mode) & FOLDER_BITS  # sticky kept
            if mode & stat.S_IWGRP and not mode & stat.S_IWOTH:  # a team's folder: the team's, whatever the umask
                mode |= stat.S_ISGID  # what is made in it takes its group, not each member's own
                if os.stat(folder).st_gid != parent.st_gid:
                    os.chown(folder, -1, parent.st_gid)  # allowed where the member is in that group
            os.chmod(folder, mode)
        except OSError:
            pass  # made by us: its default mode still works for us


def write_atomic(path: Path, data: bytes, mode: int | None = None, sync: bool = True) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half of one.
    ``sync=False``: not waited onto the disk (a file made again from others, or as durable as a .sig)."""
    staged = stage_file(path, data, mode, sync)
    try:
        os.replace(staged, path)
    except PermissionError as exc:  # a sticky folder: another member's file of that name
        raise unwritable(path, exc.strerror or str(exc), "remove it (its owner can), or use another ticket") from exc
    finally:
        if staged.exists():
            staged.unlink()


def stage_file(path: Path, data: bytes, mode: int | None = None, sync: bool = True) -> Path:
    """``data`` in a hidden file beside ``path``, synced to disk, for an ``os.replace`` onto ``path``;
    nothing is left behind when it cannot be written whole (a full disk)."""
    make_dirs(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise unwritable(path.parent, exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            if sync:
                os.fsync(fh.fileno())
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError):
            raise unwritable(path.parent, exc.strerror or str(exc)) from exc
        raise
    return Path(tmp)


def create_result_file(path: Path) -> None:
    """An empty result file (a raw log the command streams into) with :data:`RESULT_MODE`."""
    make_dirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, RESULT_MODE)
    except OSError as exc:
        raise unwritable(path, exc.strerror or str(exc)) from exc
    try:
        os.fchmod(fd, RESULT_MODE)
    except OSError:
        pass  # not ours (a file of that name from another member): it keeps its mode
    finally:
        os.close(fd)


def user_runtime_dir(base: Path | None = None) -> Path | None:
    """``/tmp/gpuverify-<uid>``: this user's own files (shared GPU readings, host-run caches, the lock of
    artifact moves without a ticket), one folder reused by every session, mode 0700. None when the
    name is taken by something not ours (another user's folder, a link): then nothing is shared."""
    path = Path(base or tempfile.gettempdir()) / f"gpuverify-{os.getuid()}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o022:
        return None  # a folder others can write in could feed us their "readings"
    return path


@dataclass(frozen=True)
class PrivateFolder:
    path: Path  # this user's own folder, mode 0700
    squatted: str | None = None  # the usual folder's name, owner and mode, when something not ours holds it


_fresh: dict[Path, PrivateFolder] = {}  # per base folder: this process's fresh folder, made once


def private_folder(base: Path | None = None) -> PrivateFolder:
    """:func:`user_runtime_dir`, else (its name taken by another user's folder or a link) a fresh
    folder of this process, mode 0700, removed at exit: never a fixed path others could make first."""
    base = Path(base or tempfile.gettempdir())
    own = user_runtime_dir(base)
    if own is not None:
        return PrivateFolder(own)
    if base not in _fresh:
        usual = base / f"gpuverify-{os.getuid()}"
        fresh = Path(tempfile.mkdtemp(prefix=f"gpuverify-{os.getuid()}-", dir=base))  # 0700, a new name
        atexit.register(shutil.rmtree, fresh, True)
        _fresh[base] = PrivateFolder(fresh, f"{usual} ({owner_and_mode(usual)}, not this user's private folder)")
    return _fresh[base]


def holds_anything(folders: Sequence[str]) -> bool:
    """Whether any of ``folders`` has an entry (a missing or unreadable one holds nothing)."""
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                if next(entries, None) is not None:
                    return True
        except OSError:
            continue
    return False
