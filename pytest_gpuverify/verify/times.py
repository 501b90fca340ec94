"""``gpuverify check``'s rules on when a run happened: its ``ts`` against the raw log's stamp, and its
``timeline`` against ``ts``..``finished_ts`` (the overlap check across artifacts rests on timelines).

The engine reads these at known moments of one run (engine/run.py, engine/outcome.py):

    ts, stamp        at the run's start, one after the other (the stamp names bench_<topic>.<stamp>.log)
    collected        the session had its targets: before any run of it began
    pick_started ... command_ended, lock_released   during the run, so within ts..finished_ts
    lock_taken       within it too, but for a caller's grant (the locked_gpu fixture's), taken before
                     the run began and let go of after it: the only hold recorded with no lock_released
    finished_ts      as the artifact is made, after every other

``ts`` and ``finished_ts`` are wall-clock readings to the millisecond; the timeline is read off the
session's clock (common/clock.py: its one wall reading advanced by the monotonic clock). The two agree
to well under :data:`SLACK_S` unless the wall clock was stepped during the session; the rules allow
that much and no more, so a time moved by minutes is named.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pytest_gpuverify.common.clock import STAMP_FORMAT
from pytest_gpuverify.records.artifact import Artifact

SLACK_S = 1.0  # the millisecond truncation of ts/finished_ts and the two clocks' reading, with room to spare


def when(text: str | None) -> datetime | None:
    """An ISO 8601 time of the artifact; None when absent or not one. One without an offset is UTC, as
    every time the engine writes (and so comparable with the others)."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def stamp_problems(art: Artifact) -> list[str]:
    """``ts`` must be the time in the raw log's name (bench_<topic>.<stamp>.log)."""
    start = when(art.ts)
    if not art.raw_output or start is None:  # no log, or a ts the time checks already name
        return []
    name = Path(art.raw_output).name
    stamp = name.removesuffix(".log").rsplit(".", 1)[-1]
    try:
        stamped = datetime.strptime(stamp, STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return [f"raw_output {name} has no stamp of the run's start"]
    if abs((start - stamped).total_seconds()) > SLACK_S:
        return [
            f"ts {art.ts} is not the raw output's stamp {stamped.isoformat(timespec='microseconds').replace('+00:00', 'Z')}"
        ]
    return []


def timeline_problems(art: Artifact) -> list[str]:
    """Every time of the timeline where the run's own ``ts``..``finished_ts`` puts it (see the module)."""
    timeline, start, end = art.timeline, when(art.ts), when(art.finished_ts)
    if timeline is None or start is None:
        return []
    problems = []
    for field, text in timeline.model_dump().items():
        if text is None:
            continue
        at = when(text)
        if at is None:
            problems.append(f"timeline.{field} {text!r} is not an ISO time")
            continue
        caller_held = field == "lock_taken" and timeline.lock_released is None
        if field != "collected" and not caller_held and (start - at).total_seconds() > SLACK_S:
            problems.append(f"timeline.{field} {text} is before ts {art.ts}")
        elif field == "collected" and (at - start).total_seconds() > SLACK_S:
            problems.append(f"timeline.collected {text} is after ts {art.ts}: the session had its targets before")
        if end is not None and (at - end).total_seconds() > SLACK_S:
            problems.append(f"timeline.{field} {text} is after finished_ts {art.finished_ts}")
    return problems
