"""Where a session's milliseconds go: named phases timed on the monotonic clock, in this process.

Every phase the session passes through is timed always (two clock readings each: nothing to turn
on); ``--gpu-profile`` prints them at the session's end (:func:`profile_lines`), and bench/profile.py
writes the same lines into bench/results/. A phase run in a thread of its own (the GPU library's
start, the Docker client, a container's versions) overlaps the session's path: it is listed apart,
so the phases on the path add up to the session's own time. No pytest here: the engine uses it too.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

MAIN_THREAD = "MainThread"


@dataclass(frozen=True)
class Span:
    phase: str
    start: float  # time.monotonic()
    end: float
    thread: str

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


class Profile:
    """The spans of this process (appends are atomic under the GIL: threads add their own)."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.marks: dict[str, float] = {}

    def add(self, phase: str, start: float, end: float) -> None:
        self.spans.append(Span(phase, start, end, threading.current_thread().name))

    def mark(self, name: str, at: float | None = None) -> None:
        """A point in time (the plugin loaded, collection over), kept at its first reading."""
        self.marks.setdefault(name, time.monotonic() if at is None else at)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.add(name, start, time.monotonic())

    def totals(self, on_path: bool) -> dict[str, tuple[float, int]]:
        """phase -> (ms in all, times), in the order each phase first began; ``on_path``: the main
        thread's phases, else the ones run alongside in threads."""
        out: dict[str, tuple[float, int]] = {}
        for span in sorted(self.spans, key=lambda s: s.start):
            if (span.thread == MAIN_THREAD) != on_path:
                continue
            ms, n = out.get(span.phase, (0.0, 0))
            out[span.phase] = (ms + span.ms, n + 1)
        return out


PROFILE = Profile()  # the process's own: the plugin and the engine add to it
phase = PROFILE.phase


def process_started() -> float | None:
    """This process's start on the monotonic clock (Linux: /proc/self/stat, to a clock tick), so
    the interpreter's and pytest's own start show as a phase; None where it cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # starttime, the 22nd field: ticks since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.monotonic() - age


def profile_lines(profile: Profile = PROFILE, now: float | None = None) -> list[str]:
    """The printed profile: the process's start to the plugin's load, each phase on the session's
    path with its total ms and count, the phases run alongside, and the time on the path that no
    phase covers (pytest's own hooks, collection, the terminal)."""
    now = time.monotonic() if now is None else now
    began = process_started()
    lines = []
    loaded = profile.marks.get("plugin loaded")
    if began is not None and loaded is not None:
        lines.append(
            f"{'process start -> plugin loaded':<34} {1000 * (loaded - began):8.1f} ms  "
            "(the interpreter, pytest and its plugins)"
        )
    path = profile.totals(on_path=True)
    for name, (ms, n) in path.items():
        lines.append(f"{name:<34} {ms:8.1f} ms" + (f"  x{n}" if n > 1 else ""))
    if loaded is not None:
        covered = _covered_ms([s for s in profile.spans if s.thread == MAIN_THREAD and s.start >= loaded])
        lines.append(f"{'other (pytest, collection, hooks)':<34} {1000 * (now - loaded) - covered:8.1f} ms")
        lines.append(f"{'plugin loaded -> this line':<34} {1000 * (now - loaded):8.1f} ms")
    alongside = profile.totals(on_path=False)
    if alongside:
        lines.append("alongside, in threads (not on the path):")
        lines += [f"  {name:<32} {ms:8.1f} ms" + (f"  x{n}" if n > 1 else "") for name, (ms, n) in alongside.items()]
    return lines


def _covered_ms(spans: list[Span]) -> float:
    """Milliseconds covered by the union of ``spans`` (a phase inside another counts once)."""
    total, reach = 0.0, None
    for span in sorted(spans, key=lambda s: s.start):
        if reach is None or span.start > reach:
            total += span.end - span.start
            reach = span.end
        elif span.end > reach:
            total += span.end - reach
            reach = span.end
    return total * 1000
