"""The artifact's ``autotune`` record: the autotuner's choices the output printed, else (per run) those the run's
Triton cache held once it ended; why none is known; and, under --gpu-ab, where the two sides chose differently."""

from __future__ import annotations

from typing import Optional

from pytest_gpuverify.config.targets import AUTOTUNE_PRINT, TRITON_KINDS
from pytest_gpuverify.records.artifact import AutotuneChoice, AutotuneRecord

DIFFER_SHOWN = 5  # functions named in the note; all are in ``autotune.differ``


def autotune_record(kind: str, env: dict[str, str], printed: list[AutotuneChoice], reads: list,
                    ab: bool) -> Optional[AutotuneRecord]:
    """``reads``: (run, side, CacheRead or None) per run whose cache was read. None for a kind Triton does not run in."""
    if kind not in TRITON_KINDS:
        return None
    choices = list(printed)
    printed_runs = {(c.run, c.side) for c in printed}
    held, problems = 0, []
    for run, side, read in reads:
        if read is None or (run, side) in printed_runs:
            continue
        choices += [c.model_copy(update={"run": run, "side": side}) for c in read.choices]
        if not read.choices:
            held += read.held_before
        if read.problem:
            problems.append(read.problem)
    record = AutotuneRecord(choices=choices, differ=differing(choices) if ab else [])
    if not choices:
        record.unknown = _why_unknown(env.get(AUTOTUNE_PRINT), held, problems)
    return record


def _why_unknown(printing: Optional[str], held: int, problems: list[str]) -> Optional[str]:
    """Why no choice is known; None where none was made (the printout was on and the cache told nothing)."""
    why = []
    if printing != "1":
        why.append(f"{AUTOTUNE_PRINT}={printing if printing is not None else '(unset)'} (the place's or the "
                   "declaration's): Triton printed no choice")
    if held:
        why.append(f"the run's Triton cache held {held} tuning result(s) from before it, which Triton reuses "
                   "without printing (cache_results / TRITON_CACHE_AUTOTUNING)")
    why += problems[:2]
    return "; ".join(why) or None


def config_text(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def differing(choices: list[AutotuneChoice]) -> list[str]:
    """Each function (and key) both sides tuned whose chosen configurations differ: ``name key: A ... | B ...``."""
    by: dict[tuple[str, Optional[str]], dict[str, set[str]]] = {}
    for c in choices:
        if c.side in ("A", "B"):
            by.setdefault((c.function, c.key), {}).setdefault(c.side, set()).add(config_text(c.config))
    found = []
    for (function, key), sides in by.items():
        if len(sides) == 2 and sides["A"] != sides["B"]:
            name = function + (f" {key}" if key else "")
            found.append(f"{name}: A {' / '.join(sorted(sides['A']))} | B {' / '.join(sorted(sides['B']))}")
    return found


def differ_note(record: Optional[AutotuneRecord]) -> Optional[str]:
    """The artifact's note when the sides tuned the same function to different configurations."""
    if record is None or not record.differ:
        return None
    names = [d.split(":", 1)[0] for d in record.differ]
    more = f" and {len(names) - DIFFER_SHOWN} more" if len(names) > DIFFER_SHOWN else ""
    return (f"autotune: the sides chose different configurations for {len(names)} function(s): "
            f"{', '.join(names[:DIFFER_SHOWN])}{more} (autotune.differ): a difference in speed may be the tuning's")
