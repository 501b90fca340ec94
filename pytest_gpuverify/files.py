"""Writing files so a reader sees the old content or the new, never half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional


def write_atomic(path: Path, data: bytes, mode: Optional[int] = None) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
