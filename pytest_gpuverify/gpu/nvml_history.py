"""The idle window read back from NVML's own history instead of waited for.

The driver keeps a buffer of utilisation samples per GPU (``nvmlDeviceGetSamples``: on the H200 71
samples over the last 14 s, ~200 ms apart, the newest ~50 ms old; notes/gpu-tools-and-locks.md 4.2)
and per-process utilisation samples (``nvmlDeviceGetProcessUtilization``). A session's first pick
reads the last window from them at once. Timestamps are CPU times in microseconds since the epoch.

What the history holds: the highest utilisation of each GPU over the window, and every process
that used it in the window (counted busy, as a process on the GPU is). What it does not hold: VRAM
over the window, so VRAM and the process list are the instant's. When a GPU's buffer does not
reach back over the whole window (a driver just loaded, sampling unsupported), there is no history
and the window is sampled as before.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .base import GpuProcess, GpuReading

_NOT_FOUND = 6
_SAMPLE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
FRESH_S = 1.0  # the newest sample must be this recent: a stalled buffer is no history


@dataclass
class DriverHistory:
    """One reading per GPU standing for the whole window ending at ``taken`` (epoch seconds)."""

    taken: float
    span_s: float
    readings: list[GpuReading]


class NoHistory(Exception):
    """Why the driver's history cannot stand for the window (the message says which GPU and why)."""


def _code(exc: BaseException) -> Optional[int]:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def read_history(nv: Any, span_s: float, current: Callable[[Any, Any, int], Optional[GpuReading]],
                 now: Optional[float] = None) -> DriverHistory:
    """The window of ``span_s`` seconds up to now from the driver's buffers. ``current(nv, handle,
    i)`` is the GPU's reading of this instant (VRAM, processes), None when it cannot be read."""
    now = time.time() if now is None else now
    start_us = int((now - span_s) * 1e6)
    readings = []
    for i in range(int(nv.nvmlDeviceGetCount())):
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(i)
        except nv.NVMLError as exc:
            raise NoHistory(f"GPU {i}: {exc}") from None
        use = _window_use(nv, handle, i, start_us, now)
        instant = current(nv, handle, i)
        if instant is None:
            raise NoHistory(f"GPU {i} could not be read now")
        procs = {p.pid: p for p in instant.processes}
        for pid in _window_pids(nv, handle, start_us):
            # a process that used the GPU inside the window counts, even if it has ended since
            procs.setdefault(pid, GpuProcess(pid=pid, name="(used it in the window)", vram_bytes=None))
        readings.append(instant.model_copy(update={"use_pct": use, "processes": tuple(procs.values())}))
    if not readings:
        raise NoHistory("no GPU")
    return DriverHistory(taken=now, span_s=span_s, readings=readings)


def _window_use(nv: Any, handle: Any, i: int, start_us: int, now: float) -> float:
    try:
        vtype, samples = nv.nvmlDeviceGetSamples(handle, nv.NVML_GPU_UTILIZATION_SAMPLES, 0)
    except nv.NVMLError as exc:
        if _code(exc) == _NOT_FOUND:
            raise NoHistory(f"GPU {i}: the driver holds no utilisation sample") from None
        raise NoHistory(f"GPU {i}: nvmlDeviceGetSamples: {exc}") from None
    field = _SAMPLE_FIELDS.get(int(vtype), "uiVal")
    points = sorted((int(s.timeStamp), getattr(s.sampleValue, field, None)) for s in samples)
    if not points:
        raise NoHistory(f"GPU {i}: the driver holds no utilisation sample")
    oldest, newest = points[0][0], points[-1][0]
    if oldest > start_us:
        raise NoHistory(f"GPU {i}: the driver's samples reach back {max(0.0, now - oldest / 1e6):.1f} s, "
                        f"less than the window")
    if newest < (now - FRESH_S) * 1e6:
        raise NoHistory(f"GPU {i}: the newest utilisation sample is {now - newest / 1e6:.1f} s old")
    # a sample is the mean over the period that ends at its timestamp: the first one after the
    # window's start covers that start
    values = [v for ts, v in points if ts > start_us]
    if any(v is None or not 0 <= float(v) <= 100 for v in values):
        raise NoHistory(f"GPU {i}: a utilisation sample in the window is out of range")
    return max(float(v) for v in values)


def _window_pids(nv: Any, handle: Any, start_us: int) -> list[int]:
    """Processes that used the GPU since ``start_us``. Without them the history would miss a process
    that ended inside the window: no history then."""
    fn = getattr(nv, "nvmlDeviceGetProcessUtilization", None)
    if fn is None:
        raise NoHistory("this pynvml has no nvmlDeviceGetProcessUtilization")
    try:
        samples = fn(handle, start_us)
    except nv.NVMLError as exc:
        if _code(exc) == _NOT_FOUND:
            return []  # no process used the GPU since then
        raise NoHistory(f"nvmlDeviceGetProcessUtilization: {exc}") from None
    pids = []
    for s in samples:
        with contextlib.suppress(TypeError, ValueError):
            if int(s.timeStamp) > start_us:
                pids.append(int(s.pid))
    return pids
