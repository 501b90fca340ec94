"""A target's pick started before its checks (the container's resolution and facts, the import
check) and run alongside them, so that the GPU lock is taken while they run instead of after.

Nothing runs on the GPU before every check has passed: the session asks for the grant (:meth:`grant`)
only once they have. A target whose checks fail drops the pick (:meth:`drop`): a wait in progress
stops, and a GPU already taken is let go of unused. bench/overhead.py shows the gain (collection ->
lock of a session's first target).
"""

from __future__ import annotations

import threading
import time

from pytest_gpuverify.common.threads import Background
from pytest_gpuverify.lease.picker import GpuGrant, GpuPicker


class PickAhead:
    def __init__(self, picker: GpuPicker, count: int, wait_s: float) -> None:
        self._picker = picker
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._dropped = False
        self._handed = False  # the pick returned its grant (to :meth:`grant` or :meth:`drop`)
        self.started = time.monotonic()  # the timeline's pick_started
        self._pick = Background(lambda: self._acquire(count, wait_s), "gpuverify-pick")

    def _acquire(self, count: int, wait_s: float) -> GpuGrant | None:
        grant = self._picker.acquire(count=count, wait_s=wait_s, cancelled=self._cancel)
        with self._lock:
            if not self._dropped:
                self._handed = True
                return grant
        self._picker.release(grant)  # dropped while it waited: never used
        return None

    def grant(self) -> GpuGrant:
        """The GPUs, once the checks have passed; raises what the pick raised (NoGpu, PickerError,
        LockError), as a pick made now would."""
        try:
            grant = self._pick.result()
        except BaseException:  # Ctrl-C while it waited, or the pick's own error: nobody else lets go of it
            self.drop()
            raise
        with self._lock:
            self._dropped = True  # handed over: drop() leaves it alone from now on
        assert grant is not None  # only a dropped pick gives none
        return grant

    def drop(self) -> None:
        """The checks failed (or the target ended another way): stop the pick and let go of what it
        took. A cancelled pick ends within a tick; one still waiting for the first window (or longer
        than a second) is not waited for: its thread lets go of what it gets."""
        with self._lock:
            if self._dropped:
                return
            self._dropped = True
        self._cancel.set()
        self._pick.wait(1.0)
        with self._lock:
            handed = self._handed  # set only before the drop: the pick's thread released nothing
        if not handed:
            return
        try:
            grant = self._pick.result()
        except Exception:  # noqa: BLE001  # the target already has its reason; the pick's is moot
            return
        if grant is not None:
            self._picker.release(grant)
