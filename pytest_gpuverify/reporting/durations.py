"""``gpuverify durations DIR... -o FILE``: how long each target took, from its artifacts, for
``--gpu-shard``'s balance (``--gpu-durations FILE``), as pytest-split's ``--store-durations`` keeps them.

A target's duration is its artifact's ``duration_s`` (the pick, the checks and the command: the time
the shard's job spends on it), the mean where several artifacts hold one topic. Only runs whose command
ran count: a target that never got a GPU says nothing about its length.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from statistics import mean

from pytest_gpuverify.common.files import write_atomic
from pytest_gpuverify.verify.schemas import SchemaError, load_checked


def durations_of(sources: list[Path], say: Callable[[str], None] = print) -> dict[str, float]:
    """topic -> seconds over the artifacts (``bench_*.json``) in ``sources`` (folders or files)."""
    seen: dict[str, list[float]] = {}
    for source in sources:
        paths = sorted(source.glob("bench_*.json")) if source.is_dir() else [source]
        if not paths:
            say(f"{source}: no artifacts (bench_*.json)")
        for path in paths:
            try:
                art = load_checked(path)
            except SchemaError as exc:
                say(f"skipped {path}: not an artifact ({exc.problems[0]})")
                continue
            except OSError as exc:
                say(f"skipped {path}: {exc}")
                continue
            if art.run is None or not art.run.ran or art.duration_s is None:
                continue
            seen.setdefault(art.topic, []).append(art.duration_s)
    return {topic: round(mean(values), 3) for topic, values in sorted(seen.items())}


def write_durations(sources: list[Path], out: Path, say: Callable[[str], None] = print) -> int:
    durations = durations_of(sources, say)
    if not durations:
        say(f"gpuverify durations: no artifact of a run that ran in {', '.join(map(str, sources))}; {out} not written")
        return 1
    write_atomic(out, (json.dumps(durations, indent=1, sort_keys=True) + "\n").encode())
    say(f"{out}: {len(durations)} target durations")
    return 0
