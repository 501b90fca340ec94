"""The idle sampler: a rolling window of GPU readings taken in the background.

A pick must rest on a whole window of readings, not one instant (a process can hold a GPU at 0 %
for a moment). Keeping the window rolling for the whole session means the window is paid once per
session: every pick after the first is immediate and still backed by a full window.

Readings taken while this session itself holds a GPU are left out of that GPU's window: our own
command's load says nothing about other users, and counting it would make a one-GPU host refuse
every target after the first. A utilisation figure is an average over a past span (NVML's over up to
a second): where that span reaches back into our own use, the figure is ours too, and only the
reading's VRAM and processes are judged (the re-check under the lock just after our own command
ended, most of all).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.gpu.base import GpuBackend, GpuReading, GpuToolError
from pytest_gpuverify.lease.lock import held_lock_ids, is_held
from pytest_gpuverify.lease.shared_readings import SharedReadings

GIB = 1 << 30


class IdleCriteria(BaseModel):
    """What "near zero" means. VRAM: an idle GPU is never at 0 B (driver reservations), so allow a
    small floor; MI300X reads about 283 MiB idle."""

    model_config = ConfigDict(defer_build=True)

    max_use_pct: float = 5.0
    max_vram_bytes: int = 1 * GIB


def busy_reason(reading: GpuReading, criteria: IdleCriteria, use: bool = True) -> str | None:
    """Why this reading is not idle, or None when it is. Unknown values count as busy. ``use``
    False: its utilisation is left out (it averages over our own use)."""
    if use and reading.use_pct is None:
        return "use unknown"
    if use and reading.use_pct is not None and reading.use_pct > criteria.max_use_pct:
        return f"use {reading.use_pct:g}%"
    if reading.vram_used_bytes is None:
        return "VRAM unknown"
    if reading.vram_used_bytes > criteria.max_vram_bytes:
        return f"VRAM {reading.vram_used_bytes / GIB:.1f} GiB in use"
    for proc in reading.processes:
        if proc.vram_bytes is None or proc.vram_bytes > 0:
            return f"process {proc.pid} ({proc.name or '?'}) on it"
    return None


@dataclass
class _Sample:
    t: float
    readings: dict[int, GpuReading]
    error: str | None = None
    locked: frozenset = frozenset()  # GPUs whose lock someone held at that moment
    # when the read ended (None: at t). A read spans [t, t_end]: under load a tool started just
    # before our own use began may read the GPU after it began, and so see our own load.
    t_end: float | None = None


@dataclass
class PastSample:
    """A reading from before the session: from the driver's history or the background sampler."""

    t: float  # seconds since the epoch
    readings: list[GpuReading]
    locked: frozenset | None = None  # None: not known then; the lock states of now are taken
    error: str | None = None


# (window seconds) -> (readings covering the window, or None), what applies, and why (for a note)
HistorySource = Callable[[float], tuple[list[PastSample] | None, str, str]]


@dataclass
class _OwnUse:
    gpu: int
    start: float
    end: float | None = None  # None: still held


@dataclass
class WindowVerdict:
    idle: list[int]
    busy: dict[int, str] = field(default_factory=dict)
    error: str | None = None


def use_span(backend: GpuBackend) -> float:
    """Seconds a utilisation figure averages over, before its reading: NVML's sample period is 1/6 s
    to 1 s by product (its documentation), and nvidia-smi prints NVML's; the ROCm tools and the amdsmi
    library read an activity counter of the moment."""
    try:
        source = backend.reading_source()
    except Exception:
        return 0.0
    return 1.0 if "NVML" in source or "nvidia-smi" in source else 0.0


def sampling_interval(window_s: float) -> float:
    """Seconds between readings of the idle window: five readings a window, 0.2 s to 1 s apart."""
    return min(1.0, max(0.2, window_s / 5))


# A tool's reading starts processes: a real rocm-smi costs 0.2-0.5 s of CPU a call, and the background
# sampler (readings_daemon.py) runs for minutes after each session on a GPU host that others benchmark
# on. Read that way, it samples at most every 2 s. A session's own sampler keeps its window's cadence
# (its pick needs the readings) and the recheck under the lock still reads at once.
TOOL_INTERVAL_S = 2.0
# reading sources that start no process (a tool's source may say why the library is not used)
IN_PROCESS = ("amdgpu sysfs", "amdsmi library, in-process", "NVML")


def reading_interval(backend: GpuBackend, interval_s: float) -> float:
    """``interval_s``, or :data:`TOOL_INTERVAL_S` when it is shorter and the backend reads by a tool."""
    try:
        source = backend.reading_source()
    except Exception:
        source = ""
    return interval_s if source.startswith(IN_PROCESS) else max(interval_s, TOOL_INTERVAL_S)


class IdleSampler:
    """Background readings of every GPU. Thread-safe; start once per session, stop at the end."""

    OWN_USE_GRACE_S = 0.5  # memory is freed a moment after our command exits

    def __init__(
        self,
        backend: GpuBackend,
        window_s: float,
        criteria: IdleCriteria | None = None,
        interval_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        lock_path_for: Callable[[int], Path] | None = None,
        shared: SharedReadings | None = None,
        history: HistorySource | None = None,
    ) -> None:
        self.backend = backend
        self.window_s = max(0.0, float(window_s))
        self.criteria = criteria or IdleCriteria()
        self.interval_s = interval_s if interval_s is not None else sampling_interval(self.window_s)
        self.use_span_s = use_span(backend)
        self._clock = clock
        self._lock_path_for = lock_path_for
        self._shared = shared
        self._unpublished: tuple[float, list] | None = None  # recheck(): taken, readings
        self._samples: deque[_Sample] = deque()
        self._own: list[_OwnUse] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._new_sample = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._started_at: float | None = None
        self.generation = 0  # bumped by every change a judgement depends on (readings, own-use marks)
        self._history = history
        self.window_source = "window"  # what the first pick's window rests on (for notes and doctor)
        self.window_note: str | None = None  # why no history served, when one was asked for
        self.patience_until: float | None = None  # the first pick waits at least this long (history)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._started_at = self._clock()
        if self.window_s > 0 and self._history is not None:
            self._fill_from_history()
        self.sample_now()
        if self.window_s > 0:
            self._thread = threading.Thread(target=self._run, name="gpuverify-idle-sampler", daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def stop(self) -> None:
        self.publish_pending()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        # a fixed cadence, not a fixed pause: a slow tool must not stretch the window
        next_at = self._clock() + self.interval_s
        while not self._stop.wait(max(0.0, next_at - self._clock())):
            self.sample_now(shared=True)
            next_at = max(next_at + self.interval_s, self._clock())

    # -- readings ----------------------------------------------------------------------------
    def sample_now(self, shared: bool = False) -> _Sample:
        """Take one reading now (or, with ``shared``, reuse one another session published within
        the interval), add it to the window and return it."""
        t = self._clock()
        try:
            if shared and self._shared is not None:
                taken, got = self._shared.get(self.backend.read)
                # the reading's own start, on our clock (not t minus its age: that counts the read twice)
                t = self._clock() - max(0.0, time.time() - taken)
            else:
                started = time.time()
                got = self.backend.read()
                if self._shared is not None:
                    self._shared.publish(started, got)  # its start, as SharedReadings.get records its own
            readings = {r.index: r for r in got}
            sample = _Sample(t, readings, locked=self._locked_now(readings), t_end=self._clock())
        except GpuToolError as exc:
            sample = _Sample(t, {}, error=str(exc))
        except Exception as exc:  # a backend bug must not kill the sampler thread silently
            sample = _Sample(t, {}, error=f"{type(exc).__name__}: {exc}")
        with self._new_sample:
            self._samples.append(sample)
            self.generation += 1
            horizon = t - self.window_s - 2 * self.interval_s - 1.0
            while len(self._samples) > 2 and self._samples[0].t < horizon:
                self._samples.popleft()
            self._new_sample.notify_all()
        return sample

    def _fill_from_history(self) -> None:
        """Readings from before the session that span the window: the first pick need not wait."""
        assert self._history is not None
        try:
            past, source, why = self._history(self.window_s)
        except Exception as exc:  # a history is a shortcut: any failure means sampling the window
            past, source, why = None, "window", f"{type(exc).__name__}: {exc}"
        if not past:
            self.window_note = why or None
            return
        now, wall = self._clock(), time.time()
        with self._new_sample:
            for p in sorted(past, key=lambda p: p.t):
                readings = {r.index: r for r in p.readings}
                locked = p.locked if p.locked is not None else self._locked_now(readings)
                self._samples.append(_Sample(now - max(0.0, wall - p.t), readings, p.error, locked))
            self.generation += 1
        self._started_at = now - self.window_s  # the window is full already
        self.window_source = source
        # A GPU busy a moment before the session is not idle yet; had the session sampled its own
        # window, the first pick would have waited that long: it may wait as long for such a GPU.
        self.patience_until = now + max(0.0, self.window_s - self.interval_s)

    def _locked_now(self, readings: dict[int, GpuReading]) -> frozenset:
        if self._lock_path_for is None:
            return frozenset()
        held = held_lock_ids()
        if not held:
            return frozenset()
        return frozenset(i for i in readings if is_held(self._lock_path_for(i), held))

    def wait_for_full_window(self, timeout: float | None = None) -> bool:
        """Block until the readings span the whole window (only the first pick of a session waits).

        The last interval is covered by the fresh reading every pick takes under the lock."""
        if self._started_at is None:
            self.start()
        assert self._started_at is not None
        ready_at = self._started_at + max(0.0, self.window_s - self.interval_s)
        deadline = None if timeout is None else self._clock() + timeout
        with self._new_sample:
            while True:
                if self._samples and self._samples[-1].t >= ready_at:
                    return True
                now = self._clock()
                if deadline is not None and now >= deadline:
                    return False
                if self._thread is None:
                    break
                wait = self.interval_s if deadline is None else min(self.interval_s, deadline - now)
                self._new_sample.wait(max(0.01, wait))
        return False

    # -- own use -----------------------------------------------------------------------------
    def mark_own_start(self, gpu: int) -> _OwnUse:
        use = _OwnUse(gpu, self._clock())
        with self._lock:
            self._own.append(use)
            self.generation += 1
        return use

    def mark_own_end(self, use: _OwnUse) -> None:
        with self._lock:
            use.end = self._clock() + self.OWN_USE_GRACE_S
            self.generation += 1

    # -- judgement ---------------------------------------------------------------------------
    def judge_window(self) -> WindowVerdict:
        """Which GPUs stayed idle over every reading of the window (own use left out)."""
        now = self._clock()
        with self._lock:
            samples = [s for s in self._samples if s.t >= now - self.window_s - self.interval_s]
            if not samples and self._samples:
                samples = [self._samples[-1]]
            own = list(self._own)
        if not samples:
            return WindowVerdict([], error="no GPU reading yet")
        errors = [s.error for s in samples if s.error]
        good = [s for s in samples if not s.error]
        if not good:
            return WindowVerdict([], error=errors[-1])
        indices = sorted({i for s in good for i in s.readings})
        busy: dict[int, str] = {}
        for gpu in indices:
            for sample in good:
                # Load while someone holds the GPU's lock is that holder's (ours or another session's):
                # it says nothing about the GPU once the lock is free, and the pick re-reads under
                # the lock anyway. Load with the lock free is a user who takes no lock: busy.
                if gpu in sample.locked or _during_own_use(own, gpu, sample.t, sample.t_end):
                    continue
                reading = sample.readings.get(gpu)
                use = not _during_own_use(own, gpu, sample.t - self.use_span_s, sample.t_end)
                reason = "missing from a reading" if reading is None else busy_reason(reading, self.criteria, use)
                if reason:
                    busy[gpu] = reason
                    break
        if errors:
            # a failed reading inside the window leaves a hole: nothing can be called idle over it
            return WindowVerdict([], {i: "a reading failed" for i in indices}, error=errors[-1])
        return WindowVerdict([i for i in indices if i not in busy], busy)

    def recheck(self, gpu: int) -> str | None:
        """A fresh reading of one GPU (taken under its lock). None when idle, else why not.

        It is published for the other sessions but not added to this window: a window sample needs
        the lock states of that moment, and reading ``/proc/locks`` waits for an RCU grace period in
        the kernel (10-25 ms on a busy host), which would sit on the handoff's path.

        Just after our own command on this GPU ended (its end marked at the release, plus the grace),
        the utilisation figure still averages over that command's last moments: it is left out, and
        VRAM and processes alone say whether another user is on the GPU."""
        try:
            got = self.backend.read()
        except GpuToolError as exc:
            return f"reading failed: {exc}"
        except Exception as exc:  # a backend bug is a failed reading, never a crash of the pick
            return f"reading failed: {type(exc).__name__}: {exc}"
        reading = next((r for r in got if r.index == gpu), None)
        now = self._clock()
        with self._lock:
            use = not _during_own_use(self._own, gpu, now - self.use_span_s, now)
        reason = "not in the reading" if reading is None else busy_reason(reading, self.criteria, use)
        self._unpublished = (time.time(), got)
        if reason:  # no command starts now: published at once
            self.publish_pending()
        return reason

    def publish_pending(self) -> None:
        """Publish the last re-check's reading. An idle one waits until the command has started
        (the session calls this then): writing the shared file would sit on the handoff's path."""
        pending, self._unpublished = self._unpublished, None
        if pending is not None and self._shared is not None:
            self._shared.publish(*pending)


def _during_own_use(own: list[_OwnUse], gpu: int, t: float, t_end: float | None = None) -> bool:
    """Whether a read spanning [t, t_end] overlaps one of our own holds of ``gpu``."""
    last = t if t_end is None else max(t, t_end)
    return any(u.gpu == gpu and u.start <= last and (u.end is None or t <= u.end) for u in own)
