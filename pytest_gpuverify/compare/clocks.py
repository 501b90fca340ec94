"""The GPUs' clocks behind each side: a side that was throttled in any run (a clock event that makes like
runs unlike: thermal, a hardware slowdown, a power brake, sync boost; records/clock_events.py), or two
sides whose SM clocks differ by more than :data:`CLOCK_BOUND`, make no call (clocks cannot be locked under
a power limit, so they are recorded per run and read here). A run at its power cap is the normal state
of a GPU under load: noted, not a veto (the cap's value is a fact of the machine, held equal elsewhere).
Artifacts without watch records are compared as before, with a note that their clocks were not recorded."""

from __future__ import annotations

from statistics import median

from pytest_gpuverify.records.artifact import GpuClocks, GpuWatch
from pytest_gpuverify.records.clock_events import POWER_CAP, classify

CLOCK_BOUND = 0.05  # the sides' SM clocks (each side's median over its runs) may differ by 5%
NOT_RECORDED = (
    "clocks were not recorded (artifacts without watch records): throttling and clock differences not checked"
)


def run_sm_mhz(watch: GpuWatch) -> float | None:
    """The SM clock a run held: the highest over its GPUs of the highest reading while it ran."""
    found = []
    for gpu in watch.clocks:
        readings = [gpu.sm_mhz_max] + [r.sm_mhz for r in (gpu.start, gpu.end) if r is not None]
        known = [v for v in readings if v is not None]
        if known:
            found.append(max(known))
    return max(found) if found else None


def _run_name(watch: GpuWatch) -> str:
    return f"run {watch.run}" if watch.run is not None else "its run"


def events(gpu: GpuClocks) -> tuple[list[str], list[str]]:
    """(unlike, normal) clock events of one GPU's run; an artifact written before the classes were kept
    has them sorted here from the events it saw."""
    if gpu.unlike_events is not None and gpu.normal_events is not None:
        return gpu.unlike_events, gpu.normal_events
    return classify(gpu.throttle_seen)


def throttled(label: str, watches: list[GpuWatch]) -> list[str]:
    return [
        f"{label} was throttled in {_run_name(w)} (GPU {g.index}: {', '.join(unlike)})"
        for w in watches
        for g in w.clocks
        if (unlike := events(g)[0])
    ]


def at_power_cap(label: str, watches: list[GpuWatch]) -> list[str]:
    """A note for a side that reached its power cap: how many of its runs, by which names."""
    capped = [w for w in watches if any(POWER_CAP.intersection(events(g)[1]) for g in w.clocks)]
    if not capped:
        return []
    names = sorted({n for w in capped for g in w.clocks for n in POWER_CAP.intersection(events(g)[1])})
    return [
        f"the {label} reached its power cap in {len(capped)} of {len(watches)} runs ({', '.join(names)}): "
        "the normal state of a GPU under load, not a veto"
    ]


def clock_problem(base: list[GpuWatch], head: list[GpuWatch]) -> tuple[str | None, list[str]]:
    """(why no call can be made, or None; notes for the header)."""
    if not base and not head:
        return None, [NOT_RECORDED]
    notes = []
    if not base or not head:
        notes.append(f"clocks were recorded for the {'head' if head else 'base'} only: their difference not checked")
    for label, side in (("base", base), ("head", head)):
        unread = [w for w in side if not w.clocks]
        if unread:
            why = next((p for w in unread for p in w.problems), "no reason recorded")
            notes.append(
                f"the {label}'s clocks were not read in {len(unread)} of {len(side)} runs ({why}): "
                "throttling there not checked"
            )
    notes += at_power_cap("base", base) + at_power_cap("head", head)
    found = throttled("the base", base) + throttled("the head", head)
    sides = [[v for v in map(run_sm_mhz, side) if v is not None] for side in (base, head)]
    if all(sides):
        b, h = median(sides[0]), median(sides[1])
        if abs(b - h) > CLOCK_BOUND * min(b, h):
            found.append(
                f"the sides' SM clocks differ by {abs(b - h) / min(b, h):.0%} (base {b:.0f} MHz, "
                f"head {h:.0f} MHz; bound {CLOCK_BOUND:.0%})"
            )
    elif base and head:
        notes.append("SM clocks not read on both sides: their difference not checked")
    return ("; ".join(found) if found else None), notes
