"""The artifact's autotune record (engine/autotune.py, records/autotune.py): printed choices first, a run's cache
where it printed none, why none is known, and where --gpu-ab's sides chose differently."""

from __future__ import annotations

from pytest_gpuverify.config.targets import BENCH, FLYDSL_PYTEST
from pytest_gpuverify.engine.autotune import autotune_record
from pytest_gpuverify.place.autotune_cache import CacheRead
from pytest_gpuverify.records.artifact import AutotuneChoice
from pytest_gpuverify.records.autotune import differ_note, differing

ON = {"TRITON_PRINT_AUTOTUNING": "1"}


def choice(side=None, run=None, block=64, source="output", key=None):
    return AutotuneChoice(
        function="_k", config={"BLOCK": block, "num_warps": 4}, side=side, run=run, source=source, key=key
    )


def test_a_printed_choice_wins_over_its_runs_cache_and_the_cache_fills_a_silent_run() -> None:
    printed = [choice("A", 1)]
    reads = [
        (1, "A", CacheRead(choices=[choice(source="cache", block=999)])),
        (1, "B", CacheRead(choices=[choice(source="cache", block=128)])),
    ]
    record = autotune_record(BENCH, ON, printed, reads, ab=True)
    assert [(c.side, c.run, c.config["BLOCK"], c.source) for c in record.choices] == [
        ("A", 1, 64, "output"),
        ("B", 1, 128, "cache"),
    ]
    assert record.unknown is None and record.differ == ["_k: A BLOCK=64, num_warps=4 | B BLOCK=128, num_warps=4"]


def test_why_no_choice_is_known() -> None:
    off = autotune_record(
        BENCH, {"TRITON_PRINT_AUTOTUNING": "0"}, [], [(None, None, CacheRead(held_before=2))], ab=False
    )
    assert off.choices == [] and off.unknown.startswith("TRITON_PRINT_AUTOTUNING=0 (the place's or the declaration's)")
    assert "held 2 tuning result(s) from before it" in off.unknown
    assert autotune_record(BENCH, ON, [], [(None, None, CacheRead())], ab=False).unknown is None  # nothing was tuned
    assert autotune_record(FLYDSL_PYTEST, ON, [], [], ab=False) is None


def test_the_same_choice_on_both_sides_or_another_key_is_no_difference() -> None:
    assert differing([choice("A", key="(8,)")], [choice("B", key="(8,)")]) == []
    assert differing([choice("A", key="(8,)")], [choice("B", key="(16,)", block=128)]) == []
    names = [f"_k{i}: x | y" for i in range(7)]
    assert differ_note(names) == (
        "autotune: the sides chose different configurations for 7 function(s): "
        "_k0, _k1, _k2, _k3, _k4 and 2 more: a difference in speed may be the tuning's"
    )
    assert differ_note([]) is None
