"""The artifact's ``autotune`` record: the autotuner's choices the output printed, else (per run) those the run's
Triton cache held once it ended; why none is known; and, under --gpu-ab, where the two sides chose differently."""

from __future__ import annotations

from pytest_gpuverify.config.targets import AUTOTUNE_PRINT, TRITON_KINDS
from pytest_gpuverify.records.artifact import AutotuneChoice, AutotuneRecord
from pytest_gpuverify.records.autotune import differing


def autotune_record(
    kind: str, env: dict[str, str], printed: list[AutotuneChoice], reads: list, ab: bool
) -> AutotuneRecord | None:
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
    record = AutotuneRecord(choices=choices)
    if ab:
        record.differ = differing([c for c in choices if c.side == "A"], [c for c in choices if c.side == "B"])
    if not choices:
        record.unknown = _why_unknown(env.get(AUTOTUNE_PRINT), held, problems)
    return record


def _why_unknown(printing: str | None, held: int, problems: list[str]) -> str | None:
    """Why no choice is known; None where none was made (the printout was on and the cache told nothing)."""
    why = []
    if printing != "1":
        why.append(
            f"{AUTOTUNE_PRINT}={printing if printing is not None else '(unset)'} (the place's or the "
            "declaration's): Triton printed no choice"
        )
    if held:
        why.append(
            f"the run's Triton cache held {held} tuning result(s) from before it, which Triton reuses "
            "without printing (cache_results / TRITON_CACHE_AUTOTUNING)"
        )
    why += problems[:2]
    return "; ".join(why) or None
