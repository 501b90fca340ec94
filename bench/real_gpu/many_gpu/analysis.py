"""What the many-GPU scripts report, from the sampler's lines (sampler.py) and the artifacts: overlaps
(two runs on one GPU at once), GPUs used without their lock, lost results, the waits of the multi-GPU
targets, and the makespan against the ideal packing of the measured durations. Plain functions over
plain data, unit-tested in tests/unit/bench/test_many_gpu_analysis.py."""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class Hold:
    """One run's hold of its GPUs, from its artifact's timeline (lock taken .. lock let go)."""

    run: str  # the artifact's file name
    target: str
    gpus: tuple[int, ...]
    start: float
    end: float
    asked: float | None = None  # the pick started: the wait is start - asked


def epoch(text: str | None) -> float | None:
    return None if not text else datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def holds_of(artifacts: dict[str, dict]) -> list[Hold]:
    """Artifacts (file name -> JSON) that held GPUs; one without a lock interval is left out."""
    out = []
    for name, art in sorted(artifacts.items()):
        tl = art.get("timeline") or {}
        start, end = epoch(tl.get("lock_taken")), epoch(tl.get("lock_released"))
        gpus = tuple(g["index"] for g in art.get("gpus") or [] if g.get("index") is not None)
        if start is None or end is None or not gpus:
            continue
        target = (art.get("target") or {}).get("name") or art.get("topic", "?")
        out.append(Hold(name, target, gpus, start, end, epoch(tl.get("pick_started"))))
    return out


def lock_overlaps(holds: Iterable[Hold]) -> list[tuple[int, str, str, float]]:
    """(GPU, run, run, seconds) for every two holds of one GPU that overlap in time."""
    by_gpu: dict[int, list[Hold]] = {}
    for h in holds:
        for g in h.gpus:
            by_gpu.setdefault(g, []).append(h)
    out = []
    for g, hs in sorted(by_gpu.items()):
        hs.sort(key=lambda h: h.start)
        for i, a in enumerate(hs):
            for b in hs[i + 1 :]:
                if b.start >= a.end:
                    break
                out.append((g, a.run, b.run, min(a.end, b.end) - b.start))
    return out


def read_samples(path: Path) -> tuple[dict, list[dict]]:
    """(the header line, the samples) of a sampler's file; a line cut by a kill at the end is dropped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0]) if lines else {}
    samples = []
    for line in lines[1:]:
        try:
            samples.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return header, samples


def sample_overlaps(samples: Iterable[dict], source: str) -> list[tuple[float, int, list[str]]]:
    """(time, GPU, runs) where ``source`` ("nvml" or "env") saw two runs' processes on one GPU at once."""
    return [
        (s["t"], int(g), names) for s in samples for g, names in (s.get(source) or {}).items() if len(set(names)) > 1
    ]


def unlocked_uses(samples: Iterable[dict], source: str) -> list[tuple[float, int, list[str]]]:
    """(time, GPU, runs) where a run's process was on a GPU whose lock nobody held, before or after."""
    return [
        (s["t"], int(g), names)
        for s in samples
        for g, names in (s.get(source) or {}).items()
        if names and str(g) not in {str(k) for k in (s.get("locks") or {})}
    ]


def outside_their_lock(samples: Iterable[dict], source: str, held: dict[str, set[int]]) -> list[tuple[int, str]]:
    """(GPU, run marker) pairs seen where the run's artifact names no such GPU (``held``: marker -> GPUs)."""
    seen = {(int(g), m) for s in samples for g, names in (s.get(source) or {}).items() for m in names}
    return sorted((g, m) for g, m in seen if m in held and g not in held[m])


def lost(expected: Iterable[str], artifacts: dict[str, dict]) -> list[str]:
    """Targets with no artifact (``expected``: target names, one per run asked for, repeats allowed)."""
    got: dict[str, int] = {}
    for art in artifacts.values():
        name = (art.get("target") or {}).get("name")
        if name:
            got[name] = got.get(name, 0) + 1
    missing = []
    for name in expected:
        if got.get(name, 0) > 0:
            got[name] -= 1
        else:
            missing.append(name)
    return missing


def packed_makespan(jobs: Iterable[tuple[int, float]], gpus: int) -> float:
    """The makespan of the jobs (GPU count, seconds) packed onto ``gpus`` GPUs by longest first, each job
    started when its count of GPUs is free: a packing one could have had, for the measured durations."""
    free = [0.0] * gpus
    heapq.heapify(free)
    end = 0.0
    for need, secs in sorted(jobs, key=lambda j: (-j[0] * j[1], -j[0])):
        if need > gpus:
            raise ValueError(f"a job needs {need} GPUs, the host has {gpus}")
        taken = [heapq.heappop(free) for _ in range(need)]
        start = max(taken)
        for _ in taken:
            heapq.heappush(free, start + secs)
        end = max(end, start + secs)
    return end


def lower_bound(jobs: Iterable[tuple[int, float]], gpus: int) -> float:
    """No packing ends sooner: the GPU-seconds over the GPUs, or the longest job."""
    jobs = list(jobs)
    return max([sum(n * s for n, s in jobs) / gpus, *(s for _, s in jobs)], default=0.0)


def makespan(holds: list[Hold]) -> float:
    return max(h.end for h in holds) - min(h.start for h in holds) if holds else 0.0


def waits(holds: Iterable[Hold], min_gpus: int = 2) -> list[tuple[str, float]]:
    """(run, seconds from asking to holding) for the holds of ``min_gpus`` GPUs or more."""
    return [(h.run, h.start - h.asked) for h in holds if len(h.gpus) >= min_gpus and h.asked is not None]


def gpu_lock_mismatches(artifacts: dict[str, dict]) -> list[str]:
    """Artifacts whose GPU is not the one its lock file names (gpu-<index>.lock)."""
    out = []
    for name, art in sorted(artifacts.items()):
        for g in art.get("gpus") or []:
            m = re.search(r"gpu-(\d+)\.lock$", g.get("lock_path") or "")
            if m is None or int(m[1]) != g.get("index"):
                out.append(f"{name}: gpu {g.get('index')} under lock {g.get('lock_path')}")
    return out


def fanout_goal(wall_n: float, wall_1: float, n: int, start_cost: float) -> tuple[float, float]:
    """(the measured ratio wall over N GPUs / wall on one, the goal 1.15/N + start cost / wall on one)."""
    return wall_n / wall_1, 1.15 / n + start_cost / wall_1


def load_artifacts(folder: Path) -> dict[str, dict]:
    out = {}
    for p in sorted(folder.rglob("bench_*.json")):
        try:
            out[str(p.relative_to(folder))] = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            out[str(p.relative_to(folder))] = {"unreadable": str(exc)}
    return out
