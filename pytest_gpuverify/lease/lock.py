"""The GPU lock: the same kernel ``flock`` that the env file's ``flock`` prefix takes.

We hold it with ``fcntl.flock`` on our own open file description, so it excludes (and is excluded by)
``flock(1)``, ``filelock`` and every other ``flock`` user of the path. The descriptor is opened
``O_CLOEXEC``: no command we start can inherit it and keep the GPU locked after we let go (a child
that inherits a ``flock`` descriptor holds the lock until it exits, even after its parent was killed
with kill -9). The kernel drops it if this process dies, even on kill -9.
Lock files are never deleted: another user may hold or be waiting on them.

Lock files are shared by every user of the host, so they are opened as ``flock(1)`` opens them and
never need write permission: an existing file read-only, without ``O_CREAT`` (``fs.protected_regular``
refuses ``O_CREAT`` on another user's file in a sticky world-writable folder such as ``/var/lock``);
a missing one is created with ``O_EXCL`` and made 0666 with ``fchmod`` (the umask would strip it), so
any user can lock it after us. A file someone else made is never chmod'ed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from pytest_gpuverify.common.locks import flock_nowait


class LockError(OSError):
    """The lock file could not be opened (missing directory, permissions). Names the path and the fix."""


class GpuLease:
    """An exclusive hold on one GPU's lock file. Use :meth:`try_acquire`; always :meth:`release`."""

    def __init__(self, path: Path, gpu_index: int) -> None:
        self.path = Path(path)
        self.gpu_index = gpu_index
        self._fd: int | None = None
        self.acquired_at: float | None = None
        self.released_at: float | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def fileno(self) -> int:
        """The held lock's descriptor (a run's guard keeps a duplicate of it)."""
        if self._fd is None:
            raise LockError(0, f"{self.path} is not held")
        return self._fd

    def try_acquire(self) -> bool:
        """Take the lock without waiting. False when someone else holds it."""
        if self._fd is not None:
            return True
        fd = open_lock_file(self.path)
        try:
            taken = flock_nowait(fd)
        except OSError as exc:
            os.close(fd)
            raise LockError(exc.errno, f"cannot lock {self.path}: {exc.strerror}") from exc
        if not taken:
            os.close(fd)
            return False
        self._fd = fd
        self.acquired_at = time.monotonic()
        self.released_at = None
        return True

    @classmethod
    def adopt(cls, path: Path, gpu_index: int, fd: int, acquired_at: float) -> GpuLease:
        """A lease over ``fd``, an open of ``path`` that holds its lock already (a blocking waiter's)."""
        lease = cls(path, gpu_index)
        lease._fd, lease.acquired_at = fd, acquired_at
        return lease

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # read before the unlock: the recorded hold lies inside the real one (taken_at is read after
        # the lock), so two runs' recorded holds of one GPU never overlap (exclusivity.py)
        self.released_at = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> GpuLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"GpuLease(gpu={self.gpu_index}, path={str(self.path)!r}, held={self.held})"


LOCK_FILE_MODE = 0o666  # anyone may lock it; flock needs no write permission, but older tools open O_RDWR
_OPEN_EXISTING = os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC
_CREATE = os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC | os.O_CREAT | os.O_EXCL


def open_lock_file(path: Path) -> int:
    """A close-on-exec descriptor of the lock file ``path`` for ``flock``, as ``flock(1)`` would get."""
    for _ in range(10):  # a file removed between our two opens (an admin's cleanup): look again
        try:
            return os.open(path, _OPEN_EXISTING)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _open_error(path, exc) from exc
        try:
            fd = os.open(path, _CREATE, LOCK_FILE_MODE)
        except FileExistsError:
            continue  # another session created it first: open theirs read-only
        except OSError as exc:
            raise _open_error(path, exc) from exc
        try:
            os.fchmod(fd, LOCK_FILE_MODE)  # ours: created just now
        except OSError:
            pass
        return fd
    raise LockError(errno.ENOENT, f"cannot open GPU lock file {path}: it keeps disappearing")


def _open_error(path: Path, exc: OSError) -> LockError:
    from pytest_gpuverify.common.files import owner_and_mode

    if isinstance(exc, FileNotFoundError) or not path.parent.is_dir():
        fix = f"create {path.parent} (mode 1777, as /var/lock), or change the lock cell of the GPU lock table"
        where = f"folder {path.parent} missing"
    elif path.exists():
        fix = f"its owner or root: `chmod a+r {path}`"
        where = owner_and_mode(path)
    else:
        fix = f"`chmod 1777 {path.parent}` (root), or change the lock cell of the GPU lock table"
        where = f"folder {path.parent}: {owner_and_mode(path.parent)}"
    return LockError(exc.errno, f"cannot open GPU lock file {path} ({where}): {exc.strerror}. Fix: {fix}")


def is_locked_elsewhere(path: Path) -> bool:
    """True when another open file description holds ``path`` (a read-only probe; creates nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not flock_nowait(fd):
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def held_lock_ids() -> set[tuple[int, int, int]] | None:
    """(major, minor, inode) of every file someone holds a ``flock`` on, from ``/proc/locks``.

    A read-only view: probing a lock by taking it would, for a moment, make another user's
    non-blocking attempt fail. None when /proc/locks cannot be read (not Linux)."""
    holders = lock_holders()
    return None if holders is None else set(holders)


def lock_holders() -> dict[tuple[int, int, int], int] | None:
    """(major, minor, inode) -> the pid that took the ``flock``, from ``/proc/locks`` (None: unreadable)."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    held: dict[tuple[int, int, int], int] = {}
    for line in text.splitlines():
        fields = line.split()
        if "FLOCK" not in fields[1:3] or "->" in fields:  # "->" marks a waiter, not a holder
            continue
        try:
            major, minor, inode = fields[5].split(":")
            held[(int(major, 16), int(minor, 16), int(inode))] = int(fields[4])
        except (IndexError, ValueError):
            continue
    return held


def lock_id(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.major(st.st_dev), os.minor(st.st_dev), st.st_ino


def describe_pid(pid: int) -> str:
    """``pid 123 (alice): flock -x /var/lock/gpu-1.lock sleep 30``, as far as /proc shows it."""
    import pwd

    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read(4096).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"pid {pid} (not visible here)"
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = f"uid {uid}"
    return f"pid {pid} ({user}): {cmd[:120] or '?'}"


def is_held(path: Path, held: set[tuple[int, int, int]]) -> bool:
    return lock_id(path) in held


def holder_of(path: Path) -> str:
    """Who holds the ``flock`` on ``path``: :func:`describe_pid` of the holder /proc/locks names."""
    key = lock_id(path)
    pid = (lock_holders() or {}).get(key) if key is not None else None
    return describe_pid(pid) if pid is not None else "a process /proc/locks does not show"
