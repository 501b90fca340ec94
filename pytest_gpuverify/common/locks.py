"""The one way a lock file is tried without waiting (``flock``, exclusive, non-blocking)."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def flock_nowait(fd: int) -> bool:
    """Take ``fd``'s exclusive lock if it is free: False when another holder has it; any other
    failure (a file system without locks) raises ``OSError``."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _HELD:
            return False
        raise
    return True


def try_lock_file(path: Path, mode: int = 0o600) -> int | None:
    """An fd holding ``path``'s lock (the file made if missing), or None when it is held or cannot be
    opened or locked: for locks whose absence only means someone else does the work."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    except OSError:
        return None
    try:
        if flock_nowait(fd):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None
