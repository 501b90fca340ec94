"""Clock events: NVML's reason bits and AMD's throttler bits and violation flags read into names
(gpu/clocks.py), and their two classes (records/clock_events.py): what makes like runs unlike, and the
normal operating state (the power cap among it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_gpuverify.gpu.clocks import amd_events, nvml_clocks
from pytest_gpuverify.records.clock_events import AMD_INDEP_REASONS, NORMAL, NVML_REASONS, POWER_CAP, classify


def nvml(reasons: int, event_call: bool = True) -> SimpleNamespace:
    """The calls of nvidia-ml-py that nvml_clocks makes, an H200 under a GEMM; ``event_call``: the
    binding has nvmlDeviceGetCurrentClocksEventReasons (12.x on), else only the older Throttle name."""
    calls = dict(
        NVML_CLOCK_SM=1,
        NVML_CLOCK_MEM=2,
        NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetClockInfo=lambda h, kind: 1755 if kind == 1 else 3201,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetTemperature=lambda h, kind: 61,
        nvmlDeviceGetPowerUsage=lambda h: 699_120,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: reasons,
    )
    if event_call:
        calls["nvmlDeviceGetCurrentClocksEventReasons"] = lambda h: reasons
    return SimpleNamespace(**calls)


@pytest.mark.parametrize("event_call", [True, False])
def test_nvml_reasons_are_named_and_sorted_into_their_classes(event_call):
    sample = nvml_clocks(nvml(0x4 | 0x1, event_call), 0, 0)
    assert sample.throttle == ("gpu_idle", "sw_power_cap") and sample.power_w == pytest.approx(699.12)
    assert classify(sample.throttle) == ([], ["gpu_idle", "sw_power_cap"])
    hot = nvml_clocks(nvml(0x4 | 0x20 | 0x40 | 0x8 | 0x80 | 0x10), 0, 0)
    assert classify(hot.throttle) == (
        ["hw_power_brake", "hw_slowdown", "hw_thermal", "sw_thermal", "sync_boost"],
        ["sw_power_cap"],
    )
    assert classify(nvml_clocks(nvml(0x2 | 0x100), 0, 0).throttle) == (
        [],
        ["applications_clocks_setting", "display_clock_setting"],
    )


def test_every_nvml_reason_has_a_class_and_an_unknown_bit_is_unlike():
    assert [bit for bit, _ in NVML_REASONS] == [1 << i for i in range(9)]  # nvmlClocksEventReason*: 0x1 .. 0x100
    unlike = {name for _, name in NVML_REASONS} - NORMAL
    assert unlike == {"hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake"}
    sample = nvml_clocks(nvml(0x200 | 0x4), 0, 0)  # a reason a later driver adds: not told apart, so not called
    assert classify(sample.throttle) == (["unknown_bit_9"], ["sw_power_cap"])


def test_amd_independent_throttler_bits_are_named():
    bits = 1 << 0 | 1 << 16 | 1 << 36 | 1 << 47
    assert amd_events({"indep_throttle_status": bits, "throttle_status": 7}, dict) == [
        "ppt0",
        "tdc_gfx",
        "temp_hotspot",
        "prochot_gfx",
    ]
    assert classify(["ppt0", "tdc_gfx", "temp_hotspot", "prochot_gfx"]) == (
        ["prochot_gfx", "temp_hotspot"],
        ["ppt0", "tdc_gfx"],
    )
    assert amd_events({"indep_throttle_status": 0}, dict) == []
    names = {name for _, name in AMD_INDEP_REASONS}
    assert POWER_CAP & names == {"ppt0", "ppt1", "ppt2", "ppt3", "spl", "fppt", "sppt", "sppt_apu"}
    assert {n for n in names if n.startswith(("temp_", "vrhot", "prochot"))} <= names - NORMAL


def test_amd_without_independent_bits_reads_the_violation_flags_else_names_the_number():
    unsupported = {"indep_throttle_status": "N/A", "throttle_status": "N/A"}
    flags = {
        "active_ppt_pwr": 1,
        "active_prochot_thrm": 0,
        "active_socket_thrm": 1,
        "active_vr_thrm": 255,
        "active_hbm_thrm": 0,
    }
    assert amd_events(unsupported, lambda: flags) == ["ppt_pwr", "socket_thrm"]
    assert classify(["ppt_pwr", "socket_thrm"]) == (["socket_thrm"], ["ppt_pwr"])
    every_flag_unsupported = dict.fromkeys(flags, 255)
    sentinel = {"indep_throttle_status": 0xFFFFFFFFFFFFFFFF, "throttle_status": 0x4}
    assert amd_events(sentinel, lambda: every_flag_unsupported) == ["throttle_status_0x4"]
    assert classify(["throttle_status_0x4"]) == (["throttle_status_0x4"], [])  # undecoded: cannot be told normal
    assert amd_events({"throttle_status": 0xFFFFFFFF}, lambda: None) == []
