"""The watch as the raw log's trailer seals it (raw_log.py): per run, the foreign processes on each held
GPU and, per GPU, the clock events of both classes and the SM clock's extremes and start and end readings
(the fields `gpuverify compare` reads). Names and numbers only: a foreign process is sealed by its GPU,
pid, VRAM and times, not by its name or user (another's free text); the problems' texts are not sealed.

``gpuverify check`` rebuilds this form from the artifact's ``watch`` and names every field that differs,
so removing a foreign process, a clock event or editing an SM clock in the artifact alone fails it.
"""

from __future__ import annotations

from typing import Any

from pytest_gpuverify.records.artifact import GpuClocks, GpuWatch

_FOREIGN = ("gpu", "pid", "vram_mib", "first_seen", "last_seen")


def _clocks(c: GpuClocks) -> dict[str, Any]:
    return {
        "index": c.index,
        "sm_mhz_min": c.sm_mhz_min,
        "sm_mhz_max": c.sm_mhz_max,
        "start.sm_mhz": c.start.sm_mhz if c.start is not None else None,
        "end.sm_mhz": c.end.sm_mhz if c.end is not None else None,
        "unlike_events": c.unlike_events,
        "normal_events": c.normal_events,
    }


def sealed_watch(watches: list[GpuWatch]) -> list[dict[str, Any]]:
    """The trailer's ``watch``: one entry per watch record, in the artifact's order."""
    return [
        {
            "run": w.run,
            "side": w.side,
            "samples": w.samples,
            "foreign": [{k: getattr(p, k) for k in _FOREIGN} for p in w.foreign],
            "clocks": [_clocks(c) for c in w.clocks],
        }
        for w in watches
    ]


def watch_differences(ours: list[dict[str, Any]], sealed: Any) -> list[str]:
    """Each field of the artifact's watch (``ours``: :func:`sealed_watch` of it) that the trailer's
    ``sealed`` says otherwise, named as the artifact's field."""
    said = "the raw output's trailer says"
    if not isinstance(sealed, list) or not all(isinstance(w, dict) for w in sealed):
        return [f"watch: the raw output's trailer holds no readable watch ({str(sealed)[:80]})"]
    if len(ours) != len(sealed):
        return [f"watch has {len(ours)} records, {said} {len(sealed)}"]
    problems = []
    for i, (mine, theirs) in enumerate(zip(ours, sealed)):
        for key in ("run", "side", "samples"):
            if mine[key] != theirs.get(key):
                problems.append(f"watch[{i}].{key} is {mine[key]!r}, {said} {theirs.get(key)!r}")
        problems += _listed(f"watch[{i}].foreign", mine["foreign"], theirs.get("foreign"), _process)
        problems += _listed(
            f"watch[{i}].clocks", mine["clocks"], theirs.get("clocks"), lambda c: f"gpu {c.get('index')}"
        )
    return problems


def _process(p: dict[str, Any]) -> str:
    return f"pid {p.get('pid')} on gpu {p.get('gpu')}"


def _listed(field: str, ours: list[dict], sealed: Any | None, name) -> list[str]:
    """Entries of a list, by position; a list of another length names what one holds and the other not."""
    said = "the raw output's trailer says"
    if not isinstance(sealed, list) or not all(isinstance(e, dict) for e in sealed):
        return [f"{field}: {said} {sealed!r}"]
    if len(ours) != len(sealed):
        mine, theirs = [name(e) for e in ours], [name(e) for e in sealed]
        return [
            f"{field} has {len(ours)} entries ({', '.join(mine) or 'none'}), {said} {len(sealed)} "
            f"({', '.join(theirs) or 'none'})"
        ]
    return [
        f"{field}[{j}].{key} is {value!r}, {said} {theirs.get(key)!r}"
        for j, (mine, theirs) in enumerate(zip(ours, sealed))
        for key, value in mine.items()
        if theirs.get(key) != value
    ]


def clock_consistency(watches: list[GpuWatch]) -> list[str]:
    """A GPU's clock fields agree with each other: the events seen are its two classes, ``throttled`` says
    whether the unlike class holds one, and its start and end readings' events are among those seen.
    (Records written before the classes were kept are not held to this.)"""
    problems = []
    for i, w in enumerate(watches):
        for j, c in enumerate(w.clocks):
            if c.unlike_events is None or c.normal_events is None:
                continue
            at = f"watch[{i}].clocks[{j}]"
            both = sorted(set(c.unlike_events) | set(c.normal_events))
            if c.throttle_seen != both:
                problems.append(f"{at}.throttle_seen is {c.throttle_seen}, its unlike and normal events are {both}")
            if c.throttled != bool(c.unlike_events):
                problems.append(f"{at}.throttled is {c.throttled}, its unlike events are {c.unlike_events}")
            for edge, reading in (("start", c.start), ("end", c.end)):
                extra = sorted(set(reading.throttle) - set(c.throttle_seen)) if reading is not None else []
                if extra:
                    problems.append(f"{at}.{edge}.throttle has {extra}, not in its throttle_seen")
    return problems
