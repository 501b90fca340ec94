"""The watch sealed in the raw log's trailer (records/watch_seal.py, records/raw_log.py): written with the
trailer, read back from a log of any age (before the timeline, before the watch, a trailer longer than the
tail first read), and every edit of a sealed field named as the artifact's field."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pytest_gpuverify.records.artifact import ClockReading, ForeignProcess, GpuClocks, GpuWatch
from pytest_gpuverify.records.raw_log import TIMELINE, WATCH, read_trailer, seal_log
from pytest_gpuverify.records.watch_seal import clock_consistency, sealed_watch, watch_differences

FACTS = SimpleNamespace(exit_code=0, timed_out=False, interrupted=None, container_died=False)
TIMES = {"collected": "2026-12-02T04:29:30.000000Z", "lock_released": "2026-12-02T04:29:45.000000Z"}


def gpu_clocks(
    index: int, sm_max: float = 1980.0, unlike=("sw_thermal",), normal=("gpu_idle", "sw_power_cap")
) -> GpuClocks:
    return GpuClocks(
        index=index,
        start=ClockReading(sm_mhz=345.0, throttle=["gpu_idle"]),
        end=ClockReading(sm_mhz=1980.0, throttle=["sw_power_cap"]),
        sm_mhz_min=345.0,
        sm_mhz_max=sm_max,
        throttle_seen=sorted({*unlike, *normal}),
        throttled=bool(unlike),
        unlike_events=list(unlike),
        normal_events=list(normal),
        temp_c_max=88.0,
        power_w_max=704.2,
    )


def watch(run=None, gpus=(0,), foreign=True) -> GpuWatch:
    procs = (
        [
            ForeignProcess(
                gpu=0,
                pid=740,
                name="python3",
                user="root",
                vram_mib=9066.0,
                first_seen="2026-12-02T04:29:35.647Z",
                last_seen="2026-12-02T04:29:41.797Z",
            )
        ]
        if foreign
        else []
    )
    return GpuWatch(
        run=run, backend="NVML, in-process", samples=38, foreign=procs, clocks=[gpu_clocks(i) for i in gpus]
    )


def sealed_log(tmp_path, watches) -> dict:
    log = tmp_path / "bench_x.20261202T042930000000Z.log"
    log.write_bytes(b"the command's output\n" * 3)
    seal_log(log, FACTS, "h200-1", None, [0], TIMES, watches)
    fields, why = read_trailer(log)
    assert why is None and fields is not None
    return fields


def test_the_trailer_seals_foreign_processes_events_and_sm_clocks_as_names_and_numbers(tmp_path):
    fields = sealed_log(tmp_path, [watch()])
    [sealed] = fields[WATCH]
    assert sealed["foreign"] == [
        {
            "gpu": 0,
            "pid": 740,
            "vram_mib": 9066.0,
            "first_seen": "2026-12-02T04:29:35.647Z",
            "last_seen": "2026-12-02T04:29:41.797Z",
        }
    ]  # no name, no user: others' free text
    assert sealed["clocks"] == [
        {
            "index": 0,
            "sm_mhz_min": 345.0,
            "sm_mhz_max": 1980.0,
            "start.sm_mhz": 345.0,
            "end.sm_mhz": 1980.0,
            "unlike_events": ["sw_thermal"],
            "normal_events": ["gpu_idle", "sw_power_cap"],
        }
    ]
    assert watch_differences(sealed_watch([watch()]), fields[WATCH]) == []


def test_a_long_trailer_of_many_runs_on_eight_gpus_is_read_whole(tmp_path):
    many = [watch(run=i, gpus=range(8)) for i in range(1, 21)]
    fields = sealed_log(tmp_path, many)
    line = (tmp_path / "bench_x.20261202T042930000000Z.log").read_bytes().splitlines()[-1]
    assert len(line) > 4 * 4096 and len(fields[WATCH]) == 20  # past the first two tails read
    assert watch_differences(sealed_watch(many), fields[WATCH]) == []


@pytest.mark.parametrize("lacks", [{WATCH}, {WATCH, TIMELINE}, {TIMELINE}])
def test_a_trailer_sealed_before_the_watch_is_read_without_it(tmp_path, lacks):
    fields = sealed_log(tmp_path, [watch()])
    log = tmp_path / "old.log"
    old = {k: v for k, v in fields.items() if k not in lacks}
    log.write_bytes(b"output\n[gpuverify] run ended: " + json.dumps(old).encode() + b"\n")
    assert read_trailer(log) == (old, None)
    log.write_bytes(b"output\n[gpuverify] run ended: " + json.dumps({**old, "extra": 1}).encode() + b"\n")
    assert read_trailer(log)[1] == "the raw output's trailer line does not hold the engine's fields"


def edited(change) -> list[str]:
    art = [watch(run=1), watch(run=2, foreign=False)]
    sealed = sealed_watch(art)
    mine = [w.model_copy(deep=True) for w in art]
    change(mine)
    return watch_differences(sealed_watch(mine), json.loads(json.dumps(sealed)))


def test_each_edit_of_a_sealed_field_is_named():
    said = "the raw output's trailer says"
    assert edited(lambda w: w[0].foreign.clear()) == [
        f"watch[0].foreign has 0 entries (none), {said} 1 (pid 740 on gpu 0)"
    ]
    assert edited(lambda w: setattr(w[0].foreign[0], "vram_mib", 12.0)) == [
        f"watch[0].foreign[0].vram_mib is 12.0, {said} 9066.0"
    ]
    assert edited(lambda w: setattr(w[1].clocks[0], "sm_mhz_max", 2100.0)) == [
        f"watch[1].clocks[0].sm_mhz_max is 2100.0, {said} 1980.0"
    ]
    assert edited(lambda w: setattr(w[0].clocks[0], "unlike_events", [])) == [
        f"watch[0].clocks[0].unlike_events is [], {said} ['sw_thermal']"
    ]
    assert edited(lambda w: setattr(w[1].clocks[0].start, "sm_mhz", 1980.0)) == [
        f"watch[1].clocks[0].start.sm_mhz is 1980.0, {said} 345.0"
    ]
    assert edited(lambda w: w.pop()) == [f"watch has 1 records, {said} 2"]
    assert edited(lambda w: setattr(w[1], "run", 3)) == [f"watch[1].run is 3, {said} 2"]
    assert edited(lambda w: w[0].clocks.clear()) == [f"watch[0].clocks has 0 entries (none), {said} 1 (gpu 0)"]
    assert edited(lambda w: None) == []
    assert watch_differences([], None) == ["watch: the raw output's trailer holds no readable watch (None)"]


def test_the_clock_fields_agree_with_each_other():
    good = watch()
    assert clock_consistency([good]) == []
    bad = good.model_copy(deep=True)
    bad.clocks[0].throttle_seen = ["gpu_idle", "sw_power_cap"]
    bad.clocks[0].throttled = False
    bad.clocks[0].start.throttle = ["hw_slowdown"]
    assert clock_consistency([bad]) == [
        "watch[0].clocks[0].throttle_seen is ['gpu_idle', 'sw_power_cap'], its unlike and normal events are "
        "['gpu_idle', 'sw_power_cap', 'sw_thermal']",
        "watch[0].clocks[0].throttled is False, its unlike events are ['sw_thermal']",
        "watch[0].clocks[0].start.throttle has ['hw_slowdown'], not in its throttle_seen",
    ]
    old = GpuClocks(index=0, throttle_seen=["sw_power_cap"], throttled=True)  # written before the classes: as it was
    assert clock_consistency([GpuWatch(clocks=[old])]) == []
