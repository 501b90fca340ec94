"""A GPU's clocks, temperature, power and clock-limiting reasons at one instant, read in-process (NVML, the
amdsmi library): the figures that say whether two timings ran at the same speed. Each value is None
where the driver does not give it; a reason list is empty when nothing limits the clocks.

The ROCm command-line tools are not read for these: a reading there costs a tool call of its own for
each figure, on the command's CPU time, and the in-process library gives them at no such cost.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict

# NVML's clock event (throttle) reason bits, by the names nvidia-smi -q prints in lower case
NVML_REASONS = ((0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
                (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"),
                (0x80, "hw_power_brake"), (0x100, "display_clock_setting"))
# reasons that do not slow a running kernel: an idle GPU, a clock the admin set, the display's clock
NOT_SLOWING = frozenset({"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"})
# A working GPU's SM clock below this share of its maximum, with a slowing reason active, is throttled: the
# rule and figure of nvbench's throttle detection. A power-cap reason alone is not: under load an H200 reports
# sw_power_cap at its full 1980 MHz in most readings.
THROTTLE_FRACTION = 0.75


class ClockSample(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    sm_mhz: Optional[float] = None
    mem_mhz: Optional[float] = None
    temp_c: Optional[float] = None
    power_w: Optional[float] = None
    throttle: tuple[str, ...] = ()
    sm_max_mhz: Optional[float] = None  # the GPU's maximum SM clock (NVML's max clock, amdsmi's max_clk)


def slowing(reasons) -> list[str]:
    """The reasons among ``reasons`` that slow the clocks (power, thermal, a slowdown)."""
    return [r for r in reasons if r not in NOT_SLOWING]


def is_throttled(sample: ClockSample, rated: Optional[float]) -> bool:
    """A reading taken while the GPU worked (not idle) whose SM clock a slowing reason held below
    :data:`THROTTLE_FRACTION` of ``rated`` (the maximum SM clock)."""
    return (rated is not None and sample.sm_mhz is not None and "gpu_idle" not in sample.throttle
            and bool(slowing(sample.throttle)) and sample.sm_mhz < THROTTLE_FRACTION * rated)


def nvml_clocks(nv: Any, handle: Any, index: int) -> ClockSample:
    def get(call, *args) -> Any:
        with contextlib.suppress(Exception):  # NVMLError, a binding without the call: that value unknown
            return call(*args)
        return None

    reasons = get(getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
                  or nv.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
    power = get(nv.nvmlDeviceGetPowerUsage, handle)  # mW
    return ClockSample(
        index=index, sm_mhz=_number(get(nv.nvmlDeviceGetClockInfo, handle, getattr(nv, "NVML_CLOCK_SM", 1))),
        mem_mhz=_number(get(nv.nvmlDeviceGetClockInfo, handle, getattr(nv, "NVML_CLOCK_MEM", 2))),
        temp_c=_number(get(nv.nvmlDeviceGetTemperature, handle, getattr(nv, "NVML_TEMPERATURE_GPU", 0))),
        power_w=power / 1000.0 if isinstance(power, (int, float)) else None,
        throttle=tuple(name for bit, name in NVML_REASONS if isinstance(reasons, int) and reasons & bit),
        sm_max_mhz=_number(get(nv.nvmlDeviceGetMaxClockInfo, handle, getattr(nv, "NVML_CLOCK_SM", 1))))


def amdsmi_clocks(lib: Any, handle: Any, index: int) -> ClockSample:
    def get(name: str, *args) -> Any:
        call = getattr(lib, name, None)
        with contextlib.suppress(Exception):  # AmdSmiLibraryException, an older wrapper: unknown
            return call(handle, *args) if call is not None else None
        return None

    clk = getattr(lib, "AmdSmiClkType", None)
    temp = getattr(lib, "AmdSmiTemperatureType", None)
    metric = getattr(lib, "AmdSmiTemperatureMetric", None)
    gfx = get("amdsmi_get_clock_info", clk.GFX) if clk is not None else None
    mem = get("amdsmi_get_clock_info", clk.MEM) if clk is not None else None
    hot = get("amdsmi_get_temp_metric", temp.HOTSPOT, metric.CURRENT) if temp is not None and metric else None
    power = get("amdsmi_get_power_info") or {}
    metrics = get("amdsmi_get_gpu_metrics_info") or {}
    status = metrics.get("throttle_status") if isinstance(metrics, dict) else None
    return ClockSample(
        index=index, sm_mhz=_clock(gfx), mem_mhz=_clock(mem), temp_c=_number(hot),
        power_w=_number(power.get("current_socket_power")) if isinstance(power, dict) else None,
        throttle=(f"throttle_status_{status:#x}",) if isinstance(status, int) and status else (),
        sm_max_mhz=_number(gfx.get("max_clk")) if isinstance(gfx, dict) else None)


def _clock(info: Any) -> Optional[float]:
    """``amdsmi_get_clock_info``'s current clock: ``clk`` (6.1+) or ``cur_clk`` (6.0), in MHz."""
    return _number(info.get("clk", info.get("cur_clk"))) if isinstance(info, dict) else None


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None  # "N/A", a sentinel like 0xFFFF... is out of range anyway
    return float(value) if value < 1e9 else None
