"""The held GPUs, watched while a command runs: who else computes on them, and at what clocks.

The lock keeps out users who take it; it cannot keep out a job that takes none. So from the
command's start to its end a thread reads the held GPUs at the backend's own pace (NVML and the amdsmi
library are cheap; the ROCm tools cost a process each) and sorts every compute process on them:

- the run's own: the command's process tree, on the host or in a container (lease/own_processes.py);
- foreign: any other process the readings list, wherever it lives (another exec in the same
  container too), with its VRAM (or VRAM unknown). It is recorded with
  pid, name, user, VRAM and when it was first and last seen, and makes the target INCONCLUSIVE:
  its timings and results ran beside another job;
- not visible here (another pid namespace, gone by the time it was looked up, a container that could
  not be asked): said in ``problems``, never taken for the run's.

The clocks, temperature, power and clock-limiting reasons of each held GPU are read at the command's
start and end and at every reading between, kept as start, end and extremes (gpu/clocks.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_gpuverify.gpu.base import GpuBackend, GpuReading
from pytest_gpuverify.gpu.clocks import ClockSample
from pytest_gpuverify.lease.own_processes import OwnProcesses
from pytest_gpuverify.records.artifact import ClockReading, ForeignProcess, GpuClocks, GpuWatch
from pytest_gpuverify.records.clock_events import classify

GIB, MIB = 1 << 30, 1 << 20
MAX_INTERVAL_S = 2.0
LAST_LOOK_S = 30.0  # the most :meth:`CommandWatch.stop` waits for the last reading


def watch_interval(backend: GpuBackend) -> float:
    """Seconds between readings: NVML, the amdgpu sysfs and the amdsmi library read in microseconds to milliseconds; the
    ROCm tools start a process per reading (about 25-50 ms of CPU each)."""
    source = backend.reading_source() if hasattr(backend, "reading_source") else ""
    return 0.25 if "NVML" in source else 0.5 if "library" in source or source.startswith("amdgpu sysfs") else 2.0


@dataclass
class _Seen:
    gpu: int
    pid: int
    name: str
    user: str | None
    vram: int | None
    first: float
    last: float


@dataclass
class _Clocks:
    start: ClockSample | None = None
    end: ClockSample | None = None
    all: list[ClockSample] = field(default_factory=list)


class CommandWatch:
    """Start it before the command, give it the executor's stop spec (:meth:`on_start`), stop it after:
    :meth:`stop` returns the run's :class:`GpuWatch` record."""

    def __init__(
        self,
        backend: GpuBackend,
        indices: list[int],
        owner: OwnProcesses,
        wall: Callable[[float], str | None],
        interval_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend, self.indices, self.owner, self._wall, self._clock = backend, list(indices), owner, wall, clock
        self.interval_s = interval_s if interval_s is not None else watch_interval(backend)
        self._seen: dict[tuple[int, int], _Seen] = {}
        self._clocks = {i: _Clocks() for i in self.indices}
        self._problems: list[str] = []
        self._unseen: set[int] = set()
        self._samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._read_clocks(first=True)
        self._thread = threading.Thread(target=self._run, name="gpuverify-watch", daemon=True)
        self._thread.start()

    def on_start(self, spec: Sequence[str]) -> None:
        self.owner.started(spec)

    def end(self) -> None:
        """The command ended: the watch's thread takes the last look now (a reading and the clocks), while
        the caller goes on; :meth:`stop` waits for it. With the ROCm tools a reading is a process of its
        own (tens of ms): taken alongside what follows the command, not before it. Call :meth:`stop`
        before the GPUs' lock is let go, so that the last look sees only what ran under the lock."""
        self._stop.set()

    def stop(self, run: int | None = None, side: str | None = None) -> GpuWatch:
        self._stop.set()
        if self._thread is None:
            self._last_look()
        else:
            self._thread.join(timeout=LAST_LOOK_S)
            if self._thread.is_alive():
                self._problem(f"the last reading did not finish within {LAST_LOOK_S:g} s")
        return self.record(run, side)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            started = self._clock()
            self._tick()
            self._read_clocks()
            # a slow reader (a loaded host, the ROCm tools) spends about 5% of a core at most, yet reads
            # at least every MAX_INTERVAL_S: a job beside the command for a few seconds is still seen
            self.interval_s = min(MAX_INTERVAL_S, max(self.interval_s, 20 * (self._clock() - started)))
        self._last_look()

    def _last_look(self) -> None:
        """A reading and the clocks as the command ended."""
        self._tick()
        self._read_clocks(last=True)

    def _tick(self) -> None:
        try:
            readings = self.backend.read()
        except Exception as exc:  # GpuToolError, or a backend bug: said, never raised in the thread
            self._problem(f"a reading failed: {exc}")
            return
        now = self._clock()
        with self._lock:
            self._samples += 1
            for reading in readings:
                if reading.index in self.indices:
                    self._sort(reading, now)

    def _sort(self, reading: GpuReading, now: float) -> None:
        for proc in reading.processes:
            if proc.vram_bytes == 0:
                continue  # holds nothing on the GPU (a tool that opened the device)
            own = self.owner.is_own(proc.pid)
            if own is None:
                self._unseen.add(proc.pid)
            elif not own:
                key = (reading.index, proc.pid)
                seen = self._seen.get(key)
                if seen is None:
                    self._seen[key] = _Seen(
                        reading.index, proc.pid, proc.name, self.owner.user(proc.pid), proc.vram_bytes, now, now
                    )
                else:
                    seen.last = now
                    seen.vram = max(seen.vram or 0, proc.vram_bytes or 0) or seen.vram

    def _read_clocks(self, first: bool = False, last: bool = False) -> None:
        read = getattr(self.backend, "clocks", None)
        if read is None:
            return self._problem("clocks: this backend reads none")
        try:
            samples = read(self.indices)
        except Exception as exc:
            return self._problem(f"clocks: {exc}")
        with self._lock:
            for sample in samples:
                kept = self._clocks.get(sample.index)
                if kept is None:
                    continue
                kept.all.append(sample)
                if first:
                    kept.start = sample
                if last:
                    kept.end = sample

    def _problem(self, text: str) -> None:
        with self._lock:
            if text not in self._problems and len(self._problems) < 10:
                self._problems.append(text)

    def record(self, run: int | None = None, side: str | None = None) -> GpuWatch:
        with self._lock:
            foreign = [
                ForeignProcess(
                    gpu=s.gpu,
                    pid=s.pid,
                    name=s.name or None,
                    user=s.user,
                    vram_mib=round(s.vram / MIB, 1) if s.vram is not None else None,
                    first_seen=self._wall(s.first) or "",
                    last_seen=self._wall(s.last) or "",
                )
                for s in sorted(self._seen.values(), key=lambda s: (s.gpu, s.first, s.pid))
            ]
            problems = list(self._problems)
            if self._unseen:
                shown = ", ".join(map(str, sorted(self._unseen)[:5]))
                problems.append(
                    f"processes not visible from here were not attributed (pid {shown}): another pid "
                    "namespace, gone by the time they were looked up, or a container that could not tell"
                )
            return GpuWatch(
                run=run,
                side=side,
                backend=_source(self.backend),
                interval_s=round(self.interval_s, 3),
                samples=self._samples,
                foreign=foreign,
                problems=problems,
                clocks=[_summary(i, c) for i, c in self._clocks.items() if c.all],
            )


def _source(backend: GpuBackend) -> str | None:
    try:
        return backend.reading_source()
    except Exception:
        return None


def _reading(sample: ClockSample | None) -> ClockReading | None:
    if sample is None:
        return None
    return ClockReading(
        sm_mhz=sample.sm_mhz,
        mem_mhz=sample.mem_mhz,
        temp_c=sample.temp_c,
        power_w=sample.power_w,
        throttle=list(sample.throttle),
    )


def _summary(index: int, kept: _Clocks) -> GpuClocks:
    def values(name: str) -> list[float]:
        return [v for s in kept.all if (v := getattr(s, name)) is not None]

    def low(name: str) -> float | None:
        return min(values(name), default=None)

    def high(name: str) -> float | None:
        return max(values(name), default=None)

    seen = sorted({r for s in kept.all for r in s.throttle})
    unlike, normal = classify(seen)  # the power cap is normal: only the unlike class throttles a run
    return GpuClocks(
        index=index,
        start=_reading(kept.start),
        end=_reading(kept.end),
        sm_mhz_min=low("sm_mhz"),
        sm_mhz_max=high("sm_mhz"),
        mem_mhz_min=low("mem_mhz"),
        mem_mhz_max=high("mem_mhz"),
        temp_c_max=high("temp_c"),
        power_w_max=high("power_w"),
        throttle_seen=seen,
        sm_mhz_rated=high("sm_max_mhz"),
        throttled=bool(unlike),
        unlike_events=unlike,
        normal_events=normal,
    )


def shared_reasons(watches: Sequence[GpuWatch]) -> list[str]:
    """One reason per foreign process of the run's watch records: the verdict's, and ``check``'s to re-derive."""
    out = []
    for watch in watches:
        label = f"run {watch.side or ''}{watch.run}: " if watch.run is not None and len(watches) > 1 else ""
        for p in watch.foreign:
            vram = (
                "VRAM unknown"
                if p.vram_mib is None
                else f"{p.vram_mib / 1024:.0f} GiB"
                if p.vram_mib >= 1024
                else f"{p.vram_mib:.0f} MiB"
            )
            who = ", ".join(x for x in (p.name, p.user and f"user {p.user}", vram) if x)
            out.append(
                f"{label}gpu {p.gpu} was shared during the run: pid {p.pid} ({who}) from "
                f"{_hms(p.first_seen)} to {_hms(p.last_seen)}"
            )
    return out


def _hms(stamp: str) -> str:
    """``12:01:07`` of an ISO time (UTC), as the reason shows it."""
    return stamp[11:19] if len(stamp) >= 19 else stamp
