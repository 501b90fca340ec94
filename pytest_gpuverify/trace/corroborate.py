"""The rule that sets each printed time against the GPU time of the kernels it covers, in the trace run.

A harness times its shapes one after another, each in a loop of launches of one kernel at one grid.
So the trace's launches (those whose name matches the kernel filter, when one is given) are cut into
*loops*: runs of at least :data:`MIN_LOOP` consecutive launches of the same kernel at the same grid.
Fewer (a warm-up, a correctness check, a one-off copy) are no timing loop. When there are as many loops
as printed times, the n-th printed time covers the n-th loop, and a printed time shorter than that
loop's median launch, beyond :data:`TOLERANCE`, makes the run INCONCLUSIVE, naming both figures. When
the counts differ the rows are not paired (a note says so): an honest run is never flagged on a guess.

The tolerance: a printed time per call also holds the launch gaps, so an honest one is at least its
kernel's time; but the trace run is another run (clocks boost differently, the tracer's own overhead
lengthens kernels a little, a harness may print its fastest call against the trace's median). 50% of
the printed time covers those; a timer divided by 2 or more is past it.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.records.artifact import PerfRow, ProfileRecord
from pytest_gpuverify.trace.launches import Launch, TraceError
from pytest_gpuverify.trace.readers import read_trace

TOLERANCE = 0.5  # flagged when printed * (1 + TOLERANCE) < the kernels' median time a call
MIN_LOOP = 3  # consecutive launches of one kernel at one grid that make a timing loop


@dataclass
class Loop:
    name: str
    grid: tuple[int, ...]
    durations_ns: list[int] = field(default_factory=list)

    @property
    def median_ns(self) -> int:
        return round(statistics.median(self.durations_ns))


@dataclass
class Corroboration:
    doubts: list[str] = field(default_factory=list)  # the verdict's reasons (run.trace_doubts)
    notes: list[str] = field(default_factory=list)
    pairs: list[tuple[PerfRow, Loop]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)


def kernel_loops(launches: list[Launch], kernel_filter: str | None) -> list[Loop]:
    pattern = re.compile(kernel_filter) if kernel_filter else None
    loops: list[Loop] = []
    current: Loop | None = None
    for launch in sorted(launches, key=lambda la: la.start_ns):
        if pattern is not None and not pattern.search(launch.name):
            continue
        if current is None or (current.name, current.grid) != (launch.name, launch.grid):
            current = Loop(launch.name, launch.grid)
            loops.append(current)
        current.durations_ns.append(launch.duration_ns)
    return [loop for loop in loops if len(loop.durations_ns) >= MIN_LOOP]


def printed_us(row: PerfRow) -> float | None:
    """The row's time a call as printed: its median, else its mean, else its minimum."""
    for value in (row.us_median, row.metrics.get("mean_us"), row.min_us):
        if value is not None:
            return value
    return None


def timed_rows(perf: list[PerfRow]) -> list[PerfRow]:
    """The rows the trace run printed too: a time, of the first run, of the head's side."""
    return [r for r in perf if printed_us(r) is not None and (r.run or 1) == 1 and r.side in (None, "B")]


def row_label(row: PerfRow) -> str:
    return " ".join(p for p in (row.table, row.shape, row.name) if p)


def _ms(us: float) -> str:
    return f"{us / 1000:.3g} ms"


def corroborate(perf: list[PerfRow], launches: list[Launch], kernel_filter: str | None) -> Corroboration:
    result = Corroboration(launches=launches)
    loops, rows = kernel_loops(launches, kernel_filter), timed_rows(perf)
    shown = f" matching {kernel_filter!r}" if kernel_filter else ""
    if not rows:
        result.notes.append("--gpu-trace: no printed time to set against the trace")
        return result
    if len(loops) != len(rows):
        result.notes.append(
            f"--gpu-trace: {len(rows)} printed times, {len(loops)} kernel loops{shown} in the trace: not paired. "
            "Fix: --gpu-trace-filter REGEX naming the kernel the printed times cover"
        )
        return result
    for row, loop in zip(rows, loops):
        result.pairs.append((row, loop))
        printed, took = printed_us(row), loop.median_ns / 1000
        assert printed is not None  # timed_rows keeps rows with a time
        if printed * (1 + TOLERANCE) < took:
            result.doubts.append(
                f"{row_label(row)}: printed {_ms(printed)}, the trace's kernels took {_ms(took)} a call "
                f"({loop.name}, {len(loop.durations_ns)} launches; tolerance {TOLERANCE:.0%}): "
                "the printed time is not the kernel's"
            )
    return result


def corroborate_profile(profile: ProfileRecord, folder: Path, perf: list[PerfRow]) -> Corroboration:
    """The rule on a stored trace (``profile.path`` in ``folder``); a trace run that failed, or a file
    that cannot be read, is one reason: the printed times stand uncorroborated. The engine and
    ``gpuverify check`` both call this."""
    if profile.problem or not profile.path:
        return Corroboration(doubts=[f"--gpu-trace: {profile.problem or 'the trace run wrote no trace'}"])
    try:
        launches = read_trace(folder / profile.path, profile.format)
    except TraceError as exc:
        return Corroboration(doubts=[f"--gpu-trace: {exc}"])
    if not launches:
        return Corroboration(doubts=[f"--gpu-trace: {profile.path} holds no kernel launch"])
    return corroborate(perf, launches, profile.kernel_filter)
