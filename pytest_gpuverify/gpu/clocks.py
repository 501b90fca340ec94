"""A GPU's clocks, temperature, power and clock events at one instant, read in-process (NVML, the amdsmi
library): the figures that say whether two timings ran at the same speed. Each value is None where the
driver does not give it; the event list is empty when nothing limits the clocks. The events' names and
their two classes (unlike / normal) are records/clock_events.py's.

The ROCm command-line tools are not read for these: a reading there costs a tool call of its own for
each figure, on the command's CPU time, and the in-process library gives them at no such cost.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.records.clock_events import AMD_INDEP_REASONS, AMD_VIOLATIONS, NVML_REASONS, bits_named

_UNSUPPORTED = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)  # the amdsmi library's "not supported" in a status field


class ClockSample(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    throttle: tuple[str, ...] = ()
    sm_max_mhz: float | None = None  # the GPU's maximum SM clock (NVML's max clock, amdsmi's max_clk)


def nvml_clocks(nv: Any, handle: Any, index: int) -> ClockSample:
    def get(call, *args) -> Any:
        with contextlib.suppress(Exception):  # NVMLError, a binding without the call: that value unknown
            return call(*args)
        return None

    reasons = get(
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons,
        handle,
    )
    power = get(nv.nvmlDeviceGetPowerUsage, handle)  # mW
    return ClockSample(
        index=index,
        sm_mhz=_number(get(nv.nvmlDeviceGetClockInfo, handle, getattr(nv, "NVML_CLOCK_SM", 1))),
        mem_mhz=_number(get(nv.nvmlDeviceGetClockInfo, handle, getattr(nv, "NVML_CLOCK_MEM", 2))),
        temp_c=_number(get(nv.nvmlDeviceGetTemperature, handle, getattr(nv, "NVML_TEMPERATURE_GPU", 0))),
        power_w=power / 1000.0 if isinstance(power, (int, float)) else None,
        throttle=tuple(bits_named(reasons, NVML_REASONS)) if isinstance(reasons, int) else (),
        sm_max_mhz=_number(get(nv.nvmlDeviceGetMaxClockInfo, handle, getattr(nv, "NVML_CLOCK_SM", 1))),
    )


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
    return ClockSample(
        index=index,
        sm_mhz=_clock(gfx),
        mem_mhz=_clock(mem),
        temp_c=_number(hot),
        power_w=_number(power.get("current_socket_power")) if isinstance(power, dict) else None,
        throttle=tuple(
            amd_events(metrics if isinstance(metrics, dict) else {}, lambda: get("amdsmi_get_violation_status"))
        ),
        sm_max_mhz=_number(gfx.get("max_clk")) if isinstance(gfx, dict) else None,
    )


def amd_events(metrics: dict, violations) -> list[str]:
    """The clock events of an AMD GPU: gpu_metrics' ASIC-independent throttler bits; where the driver gives
    none, the violation status' active flags (``violations()``, MI300 on); else the ASIC-specific
    ``throttle_status`` as a number, which no table here decodes."""
    indep = metrics.get("indep_throttle_status")
    if isinstance(indep, int) and not isinstance(indep, bool) and indep not in _UNSUPPORTED:
        return bits_named(indep, AMD_INDEP_REASONS, shift=True)
    found = violations()
    if isinstance(found, dict) and any(found.get(field) in (0, 1) for field, _ in AMD_VIOLATIONS):
        return [name for field, name in AMD_VIOLATIONS if found.get(field) == 1]
    status = metrics.get("throttle_status")
    if isinstance(status, int) and not isinstance(status, bool) and status not in _UNSUPPORTED and status:
        return [f"throttle_status_{status:#x}"]
    return []


def _clock(info: Any) -> float | None:
    """``amdsmi_get_clock_info``'s current clock: ``clk`` (6.1+) or ``cur_clk`` (6.0), in MHz."""
    return _number(info.get("clk", info.get("cur_clk"))) if isinstance(info, dict) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None  # "N/A", a sentinel like 0xFFFF... is out of range anyway
    return float(value) if value < 1e9 else None
