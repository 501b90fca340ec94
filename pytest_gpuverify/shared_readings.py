"""One GPU reading per interval for all of a user's sessions on a host.

Every session (and every xdist worker) keeps its own idle window, but running ``amd-smi`` twice per
interval in each of them costs a core on a busy host. The first session whose reading is due runs
the tools and publishes the result in a small file; the others take it while it is fresh. Re-checks
under a lock never use it: they always read the GPU themselves (and publish what they saw).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

from .gpu.base import GpuReading


class SharedReadings:
    def __init__(self, key: str, max_age_s: float, directory: Optional[Path] = None) -> None:
        digest = hashlib.sha1(key.encode()).hexdigest()[:16]
        base = Path(directory or tempfile.gettempdir())
        self.path = base / f"gpuverify-readings-{os.getuid()}-{digest}.json"
        self.max_age_s = max_age_s

    def load(self, max_age_s: Optional[float] = None) -> Optional[tuple[float, list[GpuReading]]]:
        """(wall time of the reading, readings) when a fresh one is published, else None."""
        try:
            data = json.loads(self.path.read_bytes())
            taken = float(data["t"])
            if not 0 <= time.time() - taken <= (self.max_age_s if max_age_s is None else max_age_s):
                return None
            return taken, [GpuReading.model_validate(r) for r in data["readings"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def publish(self, taken: float, readings: list[GpuReading]) -> None:
        payload = json.dumps({"t": taken, "readings": [r.model_dump() for r in readings]}).encode()
        try:
            fd, tmp = tempfile.mkstemp(prefix=".gpuverify-readings-", dir=self.path.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, self.path)
        except OSError:
            pass  # sharing is an optimisation: a session that cannot publish just reads for itself

    def get(self, read: Callable[[], list[GpuReading]]) -> tuple[float, list[GpuReading]]:
        try:
            os.utime(self.path.with_name(self.path.name + ".seen"))  # a reader: the background sampler stays
        except OSError:
            pass
        cached = self.load()
        if cached is not None:
            return cached
        # One refresher at a time: while another session runs the tools, take the reading it
        # published last (at most two intervals old) instead of running them a second time.
        refresher = _try_lock(self.path.with_suffix(".lock"))
        if refresher is None:
            recent = self.load(max_age_s=2 * self.max_age_s)
            if recent is not None:
                return recent
        try:
            taken = time.time()
            readings = read()
            self.publish(taken, readings)
            return taken, readings
        finally:
            if refresher is not None:
                os.close(refresher)


def _try_lock(path: Path) -> Optional[int]:
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd
