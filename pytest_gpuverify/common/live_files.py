"""Result files a session is still writing (a target's raw log, a build's), told apart from those a
stopped session left: the writer holds the file's ``flock`` from its creation until its artifact is
written, and the kernel lets go of it when the process ends, however it ends (kill -9, an OOM kill).
Another process, of any user who may read the file, tries a shared lock on it without waiting: held
means a session still runs. Over NFS the kernel maps ``flock`` to the server's byte-range locks,
so a session on another node of a shared folder is seen too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
_lock = threading.Lock()
_fds: dict[Path, int] = {}  # this process's held files


def hold(path: Path) -> None:
    """Hold ``path``'s lock until :func:`release` (or the process's end). A file system without
    locks costs nothing but the telling: the file then reads as stopped once unclaimed."""
    path = Path(path)
    with _lock:
        if path in _fds:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)  # a write lock over NFS needs a file open for writing
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a reader's shared lock is let go at once
        except OSError:
            os.close(fd)
            return
        _fds[path] = fd


def release(path: Path) -> None:
    with _lock:
        fd = _fds.pop(Path(path), None)
    if fd is not None:
        os.close(fd)


def release_under(folder: Path) -> None:
    """Every file of this process held in ``folder`` (a session's end)."""
    folder = Path(folder)
    with _lock:
        mine = [p for p in _fds if p.parent == folder]
    for path in mine:
        release(path)


def held_elsewhere(path: Path) -> bool | None:
    """Whether a live process holds ``path``'s lock: True (a session writes it), False (none does),
    None when it cannot be told (unreadable, no locks on this file system)."""
    path = Path(path)
    with _lock:
        if path in _fds:
            return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return True if exc.errno in _HELD else None
    finally:
        os.close(fd)  # closing lets go of the shared lock, if taken
    return False


def holder_pid(path: Path) -> int | None:
    """The pid of the local process holding ``path``'s flock, from /proc/locks; None when not found
    (another node's session, or no /proc)."""
    try:
        st = os.stat(path)
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    want = f":{st.st_ino} "
    for line in text.splitlines():
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a blocked waiter's line has "->" first)
        # the inode only: overlay and NFS mounts name the device differently from stat()
        if (
            len(parts) >= 6
            and parts[1] == "FLOCK"
            and parts[3] == "WRITE"
            and f"{parts[5]} ".endswith(want)
            and parts[4].isdigit()
        ):
            return int(parts[4])
    return None
