"""The idle window read back from NVML's own history instead of waited for.

The driver keeps a buffer of utilisation samples per GPU (``nvmlDeviceGetSamples``: on the H200 71
samples over the last 14 s, ~200 ms apart, the newest ~50 ms old, as read on an H200 with driver 580)
and per-process utilisation samples (``nvmlDeviceGetProcessUtilization``). A session's first pick
reads the last window from them at once. Timestamps are CPU times in microseconds since the epoch.

What the history holds: each GPU's utilisation over the window, in steps (the highest sample of
each), and every process that used it in the window (counted busy, as a process on the GPU is).
What it does not hold: VRAM over the window, so the instant's VRAM stands for every step. When a GPU's buffer does not
reach back over the whole window (a driver just loaded, sampling unsupported), there is no history
and the window is sampled as before.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_gpuverify.gpu.base import GpuProcess, GpuReading

_NOT_FOUND = 6
_SAMPLE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
FRESH_S = 1.0  # the newest sample must be this recent: a stalled buffer is no history


@dataclass
class DriverHistory:
    """The window ending at ``taken`` (epoch seconds), in steps: ``steps[k]`` is (its end, one reading
    per GPU), its use the highest over that step (so a busy moment leaves the window when it should)."""

    taken: float
    span_s: float
    steps: list[tuple[float, list[GpuReading]]]
    newest_us: dict[int, int] = field(default_factory=dict)  # per GPU: the newest sample read

    @property
    def readings(self) -> list[GpuReading]:
        """One reading per GPU for the whole window: the highest use of any step, every process."""
        out: dict[int, GpuReading] = {}
        for _, readings in self.steps:
            for r in readings:
                had = out.get(r.index)
                if had is None:
                    out[r.index] = r
                    continue
                uses = [u for u in (had.use_pct, r.use_pct) if u is not None]
                procs = {p.pid: p for p in (*had.processes, *r.processes)}
                out[r.index] = had.model_copy(
                    update={"use_pct": None if len(uses) < 2 else max(uses), "processes": tuple(procs.values())}
                )
        return [out[i] for i in sorted(out)]


class NoHistory(Exception):
    """Why the driver's history cannot stand for the window (the message says which GPU and why)."""


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def read_history(
    nv: Any,
    span_s: float,
    current: Callable[[Any, Any, int], GpuReading | None],
    now: float | None = None,
    step_s: float = 0.25,
) -> DriverHistory:
    """The window of ``span_s`` seconds up to now from the driver's buffers, in steps of about
    ``step_s``. ``current(nv, handle, i)`` is the GPU's reading of this instant (VRAM, processes),
    None when it cannot be read; its VRAM stands for every step (the driver keeps no history of it)."""
    now = time.time() if now is None else now
    start_us = int((now - span_s) * 1e6)
    n = max(1, round(span_s / step_s))
    ends_us = [start_us + round((k + 1) * span_s * 1e6 / n) for k in range(n)]
    per_step: list[list[GpuReading]] = [[] for _ in range(n)]
    newest: dict[int, int] = {}
    for i in range(int(nv.nvmlDeviceGetCount())):
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(i)
        except nv.NVMLError as exc:
            raise NoHistory(f"GPU {i}: {exc}") from None
        points = _window_points(nv, handle, i, start_us, now)
        newest[i] = points[-1][0] if points else start_us
        instant = current(nv, handle, i)
        if instant is None:
            raise NoHistory(f"GPU {i} could not be read now")
        pids = _window_pids(nv, handle, start_us)
        begin = start_us
        for k, end in enumerate(ends_us):
            # a sample is the mean over the period ending at its timestamp: the first one after a
            # step's end covers that step's tail
            inside = [v for ts, v in points if begin < ts <= end]
            after = next((v for ts, v in points if ts > end), None)
            values = inside + ([after] if after is not None else [])
            procs = {} if k < n - 1 else {p.pid: p for p in instant.processes}
            for ts, pid in pids:
                if begin < ts <= end or (k == n - 1 and ts > end):
                    # a process that used the GPU then counts, even if it has ended since
                    procs.setdefault(pid, GpuProcess(pid=pid, name="(used it in the window)", vram_bytes=None))
            use = max(values) if values else None  # no sample covers it: unknown, which is busy
            per_step[k].append(instant.model_copy(update={"use_pct": use, "processes": tuple(procs.values())}))
            begin = end
    if not per_step[0]:
        raise NoHistory("no GPU")
    return DriverHistory(
        taken=now, span_s=span_s, steps=[(end / 1e6, r) for end, r in zip(ends_us, per_step)], newest_us=newest
    )


def _window_points(nv: Any, handle: Any, i: int, start_us: int, now: float) -> list[tuple[int, float]]:
    """(timestamp us, use %) of the samples from the window's start on; NoHistory when the buffer
    does not reach back over the window or is not fresh."""
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
        raise NoHistory(
            f"GPU {i}: the driver's samples reach back {max(0.0, now - oldest / 1e6):.1f} s, less than the window"
        )
    if newest < (now - FRESH_S) * 1e6:
        raise NoHistory(f"GPU {i}: the newest utilisation sample is {now - newest / 1e6:.1f} s old")
    inside = [(ts, v) for ts, v in points if ts > start_us]
    if any(v is None or not 0 <= float(v) <= 100 for _, v in inside):
        raise NoHistory(f"GPU {i}: a utilisation sample in the window is out of range")
    return [(ts, float(v)) for ts, v in inside if v is not None]  # none is None: checked above


def _window_pids(nv: Any, handle: Any, start_us: int) -> list[tuple[int, int]]:
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
                pids.append((int(s.timeStamp), int(s.pid)))
    return pids
