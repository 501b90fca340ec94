"""One GPU reading per interval for all of a user's sessions on a host.

Every session (and every xdist worker) keeps its own idle window, but running ``amd-smi`` twice per
interval in each of them costs a core on a busy host. The first session whose reading is due runs
the tools and publishes the result in a small file; the others take it while it is fresh. Re-checks
under a lock never use it: they always read the GPU themselves (and publish what they saw).

The files live in the user's own folder (:func:`.files.user_runtime_dir`, mode 0700): one file per
host (and lock convention) and user, rewritten in place every interval, never a new one per session;
files no session has written for :data:`STALE_S` are removed (only the user's own), and so are the
``/tmp/gpuverify-readings-*`` files earlier versions left in ``/tmp``. Nobody else can plant a
"reading" there that would make a busy GPU look idle.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_gpuverify.common.files import user_runtime_dir
from pytest_gpuverify.common.locks import try_lock_file
from pytest_gpuverify.gpu.base import GpuReading

STALE_S = 3600.0  # a readings file nobody refreshed for this long belongs to no running session
_swept: set[Path] = set()  # folders swept by this process already


def readings_for(host: str, lock_template: str, interval_s: float) -> SharedReadings:
    """The readings file the sessions of one host and lock convention share (a reading is fresh for
    most of one sampling interval)."""
    return SharedReadings(f"{host}|{lock_template}", max_age_s=interval_s * 0.9)


class SharedReadings:
    def __init__(self, key: str, max_age_s: float, directory: Path | None = None) -> None:
        digest = hashlib.sha1(key.encode()).hexdigest()[:16]
        base = Path(directory) if directory is not None else user_runtime_dir()
        # None: the user's folder is unusable; the session reads for itself and shares nothing
        self.path: Path | None = base / f"readings-{digest}.json" if base is not None else None
        self.max_age_s = max_age_s
        if base is not None and base not in _swept:
            _swept.add(base)
            remove_stale(base)
            if directory is None:
                remove_stale(Path(tempfile.gettempdir()), legacy=True)

    def load(self, max_age_s: float | None = None) -> tuple[float, list[GpuReading]] | None:
        """(wall time of the reading, readings) when a fresh one is published, else None."""
        if self.path is None:
            return None
        try:
            data = json.loads(self.path.read_bytes())
            taken = float(data["t"])
            if not 0 <= time.time() - taken <= (self.max_age_s if max_age_s is None else max_age_s):
                return None
            return taken, [GpuReading.model_validate(r) for r in data["readings"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def publish(self, taken: float, readings: list[GpuReading]) -> None:
        if self.path is None:
            return
        payload = json.dumps({"t": taken, "readings": [r.model_dump() for r in readings]}).encode()
        try:
            fd, tmp = tempfile.mkstemp(prefix=".readings-", dir=self.path.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, self.path)
        except OSError:
            pass  # sharing is an optimisation: a session that cannot publish just reads for itself

    def get(self, read: Callable[[], list[GpuReading]]) -> tuple[float, list[GpuReading]]:
        try:
            if self.path is not None:  # None: nothing shared, no sampler to keep alive
                os.utime(self.path.with_name(self.path.name + ".seen"))  # a reader: the background sampler stays
        except OSError:
            pass
        cached = self.load()
        if cached is not None:
            return cached
        # One refresher at a time: while another session runs the tools, take the reading it
        # published last (at most two intervals old) instead of running them a second time.
        refresher = try_lock_file(self.path.with_suffix(".lock")) if self.path is not None else None
        if refresher is None and self.path is not None:
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


def remove_stale(folder: Path, legacy: bool = False, now: float | None = None) -> int:
    """Remove this user's readings files in ``folder`` that nobody refreshed for :data:`STALE_S`
    (with ``legacy``: the ``gpuverify-readings-<uid>-*`` files of earlier versions in ``/tmp``).
    A file of another user is never touched. Returns how many went."""
    now = time.time() if now is None else now
    uid = os.getuid()
    prefixes = (f"gpuverify-readings-{uid}-", ".gpuverify-readings-") if legacy else ("readings-", ".readings-")
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefixes)]
    except OSError:
        return 0
    for name in names:
        path = folder / name
        try:
            st = os.lstat(path)
            if st.st_uid != uid or now - st.st_mtime < STALE_S:
                continue
            if name.endswith(".lock"):  # a refresher's lock goes with its stale readings file only
                data = path.with_suffix(".json")
                if data.exists() and now - data.stat().st_mtime < STALE_S:
                    continue
            path.unlink()
            removed += 1
        except OSError:
            continue
    return removed
