"""The NVIDIA side of the machine's identity (identity.py): NVML in-process (nvidia-ml-py's ``pynvml``:
``nvmlDeviceGetSerial``, ``nvmlDeviceGetVbiosVersion``, ``nvmlDeviceGetPciInfo``, ``nvmlDeviceGetMigMode``,
``nvmlDeviceGetEnforcedPowerLimit``, ``nvmlDeviceGetEccMode``, ``nvmlDeviceGetTotalEccErrors``,
``nvmlDeviceGetMaxClockInfo``), else one ``nvidia-smi --query-gpu`` call."""

from __future__ import annotations

from typing import Any

from pytest_gpuverify.gpu.base import GpuToolError
from pytest_gpuverify.gpu.identity_collect import CHANGING, Collect, one_line, run_tool
from pytest_gpuverify.gpu.identity_formats import NVIDIA_IDENTITY_FIELDS, parse_nvidia_identity_csv, serial, watts
from pytest_gpuverify.gpu.rocm_formats import _num, _str


def text(value: Any) -> str | None:
    return _str(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)


def _handle(nv: Any, index: int, keys: tuple[str, ...], got: Collect) -> Any:
    """GPU ``index``'s handle; None (its ``keys`` unknown, saying why) when NVML gives none."""
    try:
        return nv.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # NVMLError: a GPU fallen off the bus
        for key in keys:
            got.put(index, key, None, f"nvmlDeviceGetHandleByIndex: {one_line(exc)}")
        return None


def fixed_nvml(nv: Any, index: int, got: Collect) -> None:
    handle = _handle(nv, index, ("serial", "vbios", "bdf"), got)
    if handle is None:
        return
    got.call(index, ("serial",), lambda: (serial(text(nv.nvmlDeviceGetSerial(handle))),), "nvmlDeviceGetSerial")
    got.call(index, ("vbios",), lambda: (text(nv.nvmlDeviceGetVbiosVersion(handle)),), "nvmlDeviceGetVbiosVersion")
    got.call(index, ("bdf",), lambda: (text(nv.nvmlDeviceGetPciInfo(handle).busId),), "nvmlDeviceGetPciInfo")


def changing_nvml(nv: Any, index: int, got: Collect) -> None:
    handle = _handle(nv, index, CHANGING["nvidia"], got)
    if handle is None:
        return

    def mode(call: str) -> tuple:  # (current, pending) of an enable state
        current = getattr(nv, call)(handle)[0]
        return ("enabled" if current else "disabled",)

    def count(kind: int) -> tuple:
        return (int(nv.nvmlDeviceGetTotalEccErrors(handle, kind, getattr(nv, "NVML_VOLATILE_ECC", 0))),)

    def mhz(clock: str, default: int) -> tuple:
        return (_num(nv.nvmlDeviceGetMaxClockInfo(handle, getattr(nv, clock, default))),)

    got.call(index, ("mig_mode",), lambda: mode("nvmlDeviceGetMigMode"), "nvmlDeviceGetMigMode")
    got.call(
        index,
        ("power_cap_w",),
        lambda: (watts(nv.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0),),
        "nvmlDeviceGetEnforcedPowerLimit",
    )
    got.call(index, ("ecc_mode",), lambda: mode("nvmlDeviceGetEccMode"), "nvmlDeviceGetEccMode")
    got.call(
        index,
        ("ecc_corrected",),
        lambda: count(getattr(nv, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)),
        "nvmlDeviceGetTotalEccErrors",
    )
    got.call(
        index,
        ("ecc_uncorrected",),
        lambda: count(getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)),
        "nvmlDeviceGetTotalEccErrors",
    )
    got.call(index, ("sm_mhz_max",), lambda: mhz("NVML_CLOCK_SM", 1), "nvmlDeviceGetMaxClockInfo")
    got.call(index, ("mem_mhz_max",), lambda: mhz("NVML_CLOCK_MEM", 2), "nvmlDeviceGetMaxClockInfo")


def nvidia_smi(backend: Any, indices: list[int], keys: tuple[str, ...], got: Collect) -> str | None:
    argv = ("nvidia-smi", f"--query-gpu={','.join(NVIDIA_IDENTITY_FIELDS)}", "--format=csv,noheader,nounits")
    try:
        rows, driver = parse_nvidia_identity_csv(run_tool(backend, argv))
    except GpuToolError as exc:
        got.fail(str(exc))
        rows, driver = {}, None
    for i in indices:
        for key in keys:
            got.put(
                i, key, rows.get(i, {}).get(key), "nvidia-smi printed none" if i in rows else "nvidia-smi gave no row"
            )
    return driver
