"""Exclusivity from artifacts alone: no two commands of one host held one GPU at the same time.

Each artifact's ``timeline`` says when its run took its GPU locks and let them go (its command ran in
between); a ``gpu = true`` build that took a GPU lock of its own records that hold in its build record
(builds.py: ``lock_taken``/``lock_released``), counted once however many artifacts list the build.
Over any set of artifacts, two runs on one host whose lock intervals on one GPU overlap
shared that GPU; ``gpuverify check`` names every such pair. Intervals that only touch (one released
as the next took it) do not overlap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.common.clock import parse_iso_utc
from pytest_gpuverify.records.artifact import Artifact


@dataclass(frozen=True)
class Hold:
    """One run's hold of one GPU: [start, end] in seconds since the epoch."""

    path: Path
    host: str
    gpu: int
    start: float
    end: float
    start_text: str
    end_text: str
    what: str = ""  # "" for the run itself; "build NAME (its output file)" for a build's own hold

    @property
    def of(self) -> str:
        return f" ({self.what})" if self.what else ""


@dataclass(frozen=True)
class Overlap:
    first: Hold
    second: Hold

    @property
    def seconds(self) -> float:
        return min(self.first.end, self.second.end) - max(self.first.start, self.second.start)

    def describe(self) -> str:
        a, b = self.first, self.second
        return (
            f"host {a.host} gpu {a.gpu}: {a.path}{a.of} held it {a.start_text} .. {a.end_text} and "
            f"{b.path}{b.of} held it {b.start_text} .. {b.end_text} ({self.seconds:.3f} s together)"
        )


def holds_of(art: Artifact, path: Path) -> tuple[list[Hold], str | None]:
    """The artifact's GPU holds, or why it has none to check (never ran, no timeline)."""
    builds, why = _build_holds(art, path)
    if why:
        return [], why
    runs, why = _run_holds(art, path)
    return builds + runs, why


def _span(start_text: str | None, end_text: str | None) -> tuple[tuple[float, float] | None, str | None]:
    if start_text is None or end_text is None:
        return None, "the timeline has a start but no end"
    try:
        start, end = parse_iso_utc(start_text), parse_iso_utc(end_text)
    except ValueError as exc:
        return None, f"a timeline time is not ISO 8601 ({exc})"
    if end < start:
        return None, f"the timeline ends ({end_text}) before it starts ({start_text})"
    return (start, end), None


def _build_holds(art: Artifact, path: Path) -> tuple[list[Hold], str | None]:
    holds = []
    for b in art.builds:
        if b.lock_taken is None:
            continue  # under the run's own lock (the timeline's), or no GPU
        span, why = _span(b.lock_taken, b.lock_released)
        if why or span is None:
            return [], f"build {b.name}: {why}"
        holds += [
            Hold(
                path,
                art.host or "?",
                g,
                span[0],
                span[1],
                b.lock_taken,
                b.lock_released or "",
                f"build {b.name}, {b.output}",
            )
            for g in b.gpus
        ]
    return holds, None


def _run_holds(art: Artifact, path: Path) -> tuple[list[Hold], str | None]:
    tl = art.timeline
    if tl is None and art.run is not None and not art.run.ran:
        return [], None  # never ran (a blocked run, the controller's artifact of one no host gave): held no GPU
    if tl is None:
        return [], "no timeline (written before timelines were kept)"
    start_text = tl.lock_taken or tl.command_started
    # a fixture's grant is released after the run: its command's end bounds what the artifact proves
    end_text = tl.lock_released or tl.command_ended
    if start_text is None:
        return [], None  # it never held a GPU: nothing to overlap
    span, why = _span(start_text, end_text)
    if why or span is None:
        return [], why
    start, end = span
    gpus = [g.index for g in art.gpus] or ([art.gpu.index] if art.gpu.index is not None else [])
    host = art.host or "?"
    return [Hold(path, host, g, start, end, start_text, end_text or "") for g in gpus if g is not None], None


def find_overlaps(holds: Iterable[Hold]) -> list[Overlap]:
    """Every pair of holds of one GPU of one host that overlap, in time order."""
    by_gpu: dict[tuple[str, int], list[Hold]] = {}
    seen_builds = set()
    for hold in holds:
        if hold.what:  # one build, listed in every artifact that stood on it: one hold
            if (hold.host, hold.gpu, hold.start, hold.end, hold.what) in seen_builds:
                continue
            seen_builds.add((hold.host, hold.gpu, hold.start, hold.end, hold.what))
        by_gpu.setdefault((hold.host, hold.gpu), []).append(hold)
    found: list[Overlap] = []
    for key in sorted(by_gpu):
        active: list[Hold] = []
        for hold in sorted(by_gpu[key], key=lambda h: (h.start, h.end)):
            active = [h for h in active if h.end > hold.start]
            found.extend(Overlap(h, hold) for h in active)
            active.append(hold)
    return found


def artifact_paths(paths: Iterable[str]) -> list[Path]:
    """Files as given; a folder (a ticket folder) stands for the artifacts in it (``bench_*.json``,
    the moved-aside earlier ones included)."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            out.extend(sorted(p for p in path.glob("bench_*.json") if p.is_file()))
        else:
            out.append(path)
    return out
