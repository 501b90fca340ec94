"""Waiting for a held GPU lock by blocking on it, not by polling.

One thread per candidate GPU blocks in ``flock(LOCK_EX)`` on its own open of the GPU's lock file:
the kernel hands the lock over the moment its holder lets go, and the thread passes it to the
picker, which re-checks the GPU under it. (A poll every few milliseconds made the handoff wait half
a poll on average and cost a try-lock round each time; bench/handoff.py.)

A blocked ``flock`` cannot be interrupted from another thread, so a waiter that is no longer wanted
is cancelled by pointing its descriptor at ``/dev/null`` (``dup2``, atomic; the number stays the
thread's, so no other open can get it meanwhile). The call still blocked holds the only reference
to the lock file: when the kernel grants it the lock, the file is closed as the call returns and
the lock goes with it, in the kernel, without waiting for this process to run any Python. A waiter
cancelled before its call began locks ``/dev/null`` instead and lets it go.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.lease.lock import GpuLease, open_lock_file


@dataclass
class _Waiter:
    index: int
    path: Path
    fd: int | None = None
    cancelled: bool = False


class LockWaiters:
    """Blocked waiters on GPU locks, and the leases they won. Used by one picker at a time."""

    def __init__(self) -> None:
        self._won: queue.Queue = queue.Queue()
        self._waiting: dict[int, _Waiter] = {}
        self._lock = threading.Lock()

    def wait_on(self, index: int, path: Path) -> None:
        """Make sure a thread waits for GPU ``index``'s lock (one per GPU)."""
        with self._lock:
            if index in self._waiting:
                return
            waiter = self._waiting[index] = _Waiter(index, Path(path))
        threading.Thread(target=self._wait, args=(waiter,), name=f"gpuverify-lockwait-{index}", daemon=True).start()

    def next_won(self, timeout_s: float) -> GpuLease | None:
        """A lease some waiter won, within ``timeout_s``; None when none did."""
        try:
            return self._won.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def all_won(self, timeout_s: float) -> list[GpuLease]:
        """Every lease the waiters won: waiting up to ``timeout_s`` for the first, then those already there."""
        first = self.next_won(timeout_s)
        out = [] if first is None else [first]
        while first is not None:
            try:
                out.append(self._won.get_nowait())
            except queue.Empty:
                break
        return out

    def cancel(self) -> None:
        """No waiter is wanted any more; leases already won and not taken are released."""
        with self._lock:
            waiters, self._waiting = list(self._waiting.values()), {}
            for waiter in waiters:
                waiter.cancelled = True
                if waiter.fd is not None:
                    _point_at_devnull(waiter.fd)
        while True:
            try:
                self._won.get_nowait().release()
            except queue.Empty:
                return

    def _wait(self, waiter: _Waiter) -> None:
        try:
            fd = open_lock_file(waiter.path)
        except OSError:
            with self._lock:
                if self._waiting.get(waiter.index) is waiter:
                    del self._waiting[waiter.index]  # the picker's own try-lock reports the problem
            return
        with self._lock:
            if waiter.cancelled:
                os.close(fd)
                return
            waiter.fd = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            acquired_at = time.monotonic()
        except OSError:
            acquired_at = None
        with self._lock:
            mine = not waiter.cancelled
            if self._waiting.get(waiter.index) is waiter:
                del self._waiting[waiter.index]
            if mine and acquired_at is not None:
                self._won.put(GpuLease.adopt(waiter.path, waiter.index, fd, acquired_at))
                return
        os.close(fd)  # cancelled: this is /dev/null now (or a failed call's descriptor)


def _point_at_devnull(fd: int) -> None:
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.dup2(null, fd, inheritable=False)
    finally:
        os.close(null)
