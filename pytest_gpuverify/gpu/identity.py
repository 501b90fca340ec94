"""Reading a machine's identity: the host's own facts (files under /proc, /sys, /etc) and each GPU's,
through the backend's in-process library where it is loaded (amdsmi, NVML), else its tools.

The facts come in two parts, so that a session pays only for what can change under it:

- :func:`read_fixed`: what holds for a boot and a driver: each GPU's name, arch, UUID, serial, VBIOS
  and bus address, and the GPU runtime installed (place/machine.py keeps them across sessions);
- :func:`read_changing`: what an administrator changes without a reboot, read every session: the
  driver, partition modes, MIG mode, power cap, ECC mode and error counts, clock limits.

Both return plain dicts (``gpus``: one dict per GPU with its ``index``) and never raise: a call that
fails leaves its value ``None`` and says why in ``why`` (field -> index -> reason), and ``failed``
names a call that failed outright, as opposed to a fact the hardware does not have.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_gpuverify.gpu import identity_nvidia as nvidia
from pytest_gpuverify.gpu.base import GpuInfo, GpuToolError, call_within
from pytest_gpuverify.gpu.identity_collect import CHANGING, Collect, one_line, run_tool
from pytest_gpuverify.gpu.identity_formats import (
    ROCM_SMI_STATIC,
    ROCM_SMI_VOLATILE,
    Facts,
    cuda_version,
    parse_amd_smi_identity,
    parse_amd_smi_version,
    parse_nvidia_proc_version,
    parse_nvidia_smi_cuda,
    parse_nvidia_topo,
    parse_rocm_smi_identity,
    partition,
    serial,
    watts,
)
from pytest_gpuverify.gpu.rocm_formats import _num, _str, hip_indices_from_nodes

FIXED = ("name", "arch", "uuid", "serial", "vbios", "bdf")
LIBRARY_ONLY = "read through the amdsmi library only"


def _file(path: str) -> tuple[str | None, str | None]:
    """(its stripped text, None), or (None, why not)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except PermissionError:
        return None, f"{path} is readable by root only"
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    return (text, None) if text else (None, f"{path} is empty")


def host_facts(dmi: str = "/sys/class/dmi/id") -> tuple[Facts, list[str]]:
    """The host behind a runner label: hostname, machine-id, boot id, DMI vendor/product and serial,
    kernel; and a line for each that could not be read."""
    facts: Facts = {"hostname": socket.gethostname(), "kernel": os.uname().release}
    unknowns = []
    for key, paths in (
        ("machine_id", ("/etc/machine-id", "/var/lib/dbus/machine-id")),
        ("boot_id", ("/proc/sys/kernel/random/boot_id",)),
        ("dmi_serial", (f"{dmi}/product_serial",)),
    ):
        why = None
        for path in paths:
            facts[key], why = _file(path)
            if facts[key]:
                break
        if facts[key] is None:
            unknowns.append(f"{key}: {why}")
    vendor, product = _file(f"{dmi}/sys_vendor")[0], _file(f"{dmi}/product_name")
    facts["dmi_product"] = " ".join(filter(None, (vendor, product[0]))) or None
    if facts["dmi_product"] is None:
        unknowns.append(f"dmi_product: {product[1]}")
    return facts, unknowns


# ------------------------------------------------------------------------------------------ ROCm
def rocm_runtime(environ: Mapping[str, str]) -> str | None:
    """The ROCm the host has installed, as its ``.info/version`` says (``$ROCM_PATH``, else /opt/rocm)."""
    for root in dict.fromkeys(filter(None, (environ.get("ROCM_PATH"), "/opt/rocm"))):
        text = _file(os.path.join(root, ".info", "version"))[0]
        if text:
            return f"ROCm {text.splitlines()[0]}"
    return None


def _amd(lib: Any, name: str, handle: Any, *args: Any) -> Any:
    fn = getattr(lib, name, None)
    if fn is None:
        raise GpuToolError("not in this amdsmi")
    return fn(handle, *args)


def _mhz(info: Any) -> float | None:
    value = _num(info.get("max_clk")) if isinstance(info, dict) else None
    return value if value is not None and 0 < value < 100_000 else None


def _rocm_fixed_library(lib: Any, index: int, handle: Any, got: Collect) -> None:
    def asic() -> tuple:
        info = _amd(lib, "amdsmi_get_gpu_asic_info", handle)
        return (
            _str(info.get("market_name")),
            _str(info.get("target_graphics_version")),
            serial(info.get("asic_serial")),
        )

    def board() -> tuple:
        return (serial(_amd(lib, "amdsmi_get_gpu_board_info", handle).get("product_serial")),)

    def vbios() -> tuple:
        info = _amd(lib, "amdsmi_get_gpu_vbios_info", handle)  # "version" from 6.1, "vbios_version_string" before
        return (_str(info.get("version")) or _str(info.get("vbios_version_string")),)

    got.call(index, ("name", "arch", "asic_serial"), asic, "amdsmi_get_gpu_asic_info")
    got.call(index, ("serial",), board, "amdsmi_get_gpu_board_info")
    if got.by_index[index].get("serial") is None:  # the board's serial, else the chip's
        got.put(index, "serial", got.by_index[index].get("asic_serial"), "no board or asic serial given")
    got.by_index[index].pop("asic_serial", None)
    got.out["why"].pop("asic_serial", None)
    got.call(index, ("vbios",), vbios, "amdsmi_get_gpu_vbios_info")
    got.call(
        index, ("bdf",), lambda: (_str(_amd(lib, "amdsmi_get_gpu_device_bdf", handle)),), "amdsmi_get_gpu_device_bdf"
    )


def _rocm_changing_library(lib: Any, index: int, handle: Any, got: Collect) -> None:
    def cap() -> tuple:  # microwatts on a Linux host, watts on a virtualisation host (amdsmi.h)
        value = _num(_amd(lib, "amdsmi_get_power_cap_info", handle).get("power_cap"))
        return (watts(value / 1e6 if value is not None and value >= 100_000 else value),)

    def ecc() -> tuple:
        counts = _amd(lib, "amdsmi_get_gpu_total_ecc_count", handle)
        return (_num(counts.get("correctable_count")), _num(counts.get("uncorrectable_count")))

    def ecc_mode() -> tuple:
        blocks = _amd(lib, "amdsmi_get_gpu_ecc_enabled", handle)  # a bit mask of the blocks with ECC on
        return ("enabled" if blocks else "disabled",) if isinstance(blocks, int) else (None,)

    clk = getattr(lib, "AmdSmiClkType", None)
    got.call(
        index,
        ("compute_partition",),
        lambda: (partition(_amd(lib, "amdsmi_get_gpu_compute_partition", handle)),),
        "amdsmi_get_gpu_compute_partition",
    )
    got.call(
        index,
        ("memory_partition",),
        lambda: (partition(_amd(lib, "amdsmi_get_gpu_memory_partition", handle)),),
        "amdsmi_get_gpu_memory_partition",
    )
    got.call(index, ("power_cap_w",), cap, "amdsmi_get_power_cap_info")
    got.call(index, ("ecc_mode",), ecc_mode, "amdsmi_get_gpu_ecc_enabled")
    got.call(index, ("ecc_corrected", "ecc_uncorrected"), ecc, "amdsmi_get_gpu_total_ecc_count")
    if clk is not None:
        got.call(
            index,
            ("sm_mhz_max",),
            lambda: (_mhz(_amd(lib, "amdsmi_get_clock_info", handle, clk.GFX)),),
            "amdsmi_get_clock_info",
        )
        got.call(
            index,
            ("mem_mhz_max",),
            lambda: (_mhz(_amd(lib, "amdsmi_get_clock_info", handle, clk.MEM)),),
            "amdsmi_get_clock_info",
        )
    for key in ("ecc_corrected", "ecc_uncorrected"):
        value = got.by_index[index].get(key)
        got.by_index[index][key] = int(value) if value is not None else None


def _rocm_driver_library(lib: Any, handles: list[tuple[int, Any]]) -> tuple[str | None, str | None]:
    if not handles:
        return None, "no GPU to ask"
    try:
        info = _amd(lib, "amdsmi_get_gpu_driver_info", handles[0][1])
    except Exception as exc:
        return None, f"amdsmi_get_gpu_driver_info: {one_line(exc)}"
    version = _str(info.get("driver_version")) if isinstance(info, dict) else None
    name = (_str(info.get("driver_name")) if isinstance(info, dict) else None) or "amdgpu"
    return (f"{name} {version}", None) if version else (None, "amdsmi_get_gpu_driver_info: no version given")


def _rocm_tools(
    backend: Any, indices: list[int], argv: tuple[str, ...], keys: tuple[str, ...], got: Collect
) -> str | None:
    """rocm-smi (else ``amd-smi static``) for ``keys``; the driver version it printed."""
    try:
        if backend.host.which("rocm-smi"):
            cards, driver = parse_rocm_smi_identity(run_tool(backend, argv))
            hip = hip_indices_from_nodes({c: f.get("node_id") for c, f in cards.items()}) or {c: c for c in cards}
            tool = "rocm-smi"
        else:
            cards, driver = parse_amd_smi_identity(run_tool(backend, ("amd-smi", "static", "--json")))
            hip = backend.amd_smi_hip_indices() or {c: c for c in cards}
            tool = "amd-smi static"
    except GpuToolError as exc:
        got.fail(str(exc))
        for key in keys:
            for i in indices:
                got.put(i, key, None, one_line(exc))
        return None
    got.out["read_with"] = tool
    by_hip = {hip.get(c, c): f for c, f in cards.items()}
    for i in indices:
        for key in keys:
            got.put(
                i,
                key,
                by_hip.get(i, {}).get(key),
                f"{tool} printed none" if i in by_hip else f"{tool} lists no GPU {i}",
            )
    return driver


# ------------------------------------------------------------------------------------------ the two reads
def _each(indices: list[int], fn: Callable[[int], None]) -> None:
    for i in indices:
        fn(i)


def read_fixed(backend: Any, inventory: list[GpuInfo]) -> Facts:
    """Per GPU: name, arch, UUID (the session's inventory), serial, VBIOS, bus address; and the runtime."""
    indices = sorted(g.index for g in inventory)
    vendor = backend.vendor
    if vendor == "rocm":
        library = backend.library()
        got = Collect("amdsmi library" if library is not None else "tools", indices)
        if library is not None:
            try:
                library.each_gpu(
                    lambda lib, i, h: _rocm_fixed_library(lib, i, h, got), backend.tool_timeout, "amdsmi identity"
                )
            except GpuToolError as exc:
                got.fail(str(exc))
        else:
            _rocm_tools(backend, indices, ROCM_SMI_STATIC, ("name", "arch", "serial", "vbios", "bdf"), got)
        got.out["runtime"] = rocm_runtime(getattr(backend.host, "environ", None) or os.environ)
        if got.out["runtime"] is None and backend.host.which("amd-smi"):
            try:
                version = parse_amd_smi_version(run_tool(backend, ("amd-smi", "version"))).get("rocm version")
                got.out["runtime"] = f"ROCm {version}" if version else None
            except GpuToolError as exc:
                got.fail(str(exc))
    else:
        nv = backend.nvml_module()
        got = Collect("NVML" if nv is not None else "nvidia-smi", indices)
        if nv is not None:
            try:
                call_within(
                    lambda: _each(indices, lambda i: nvidia.fixed_nvml(nv, i, got)),
                    backend.tool_timeout,
                    "NVML identity",
                )
            except Exception as exc:  # NVMLError, a timeout
                got.fail(f"NVML: {one_line(exc)}")
            try:  # the CUDA version the driver supports: what a CUDA runtime in a container runs on
                call = getattr(nv, "nvmlSystemGetCudaDriverVersion_v2", None) or nv.nvmlSystemGetCudaDriverVersion
                cuda = cuda_version(call())
            except Exception:  # NVMLError, a binding without either call
                cuda = None
        else:
            nvidia.nvidia_smi(backend, indices, ("serial", "vbios", "bdf"), got)
            cuda = None
        if cuda is None:
            try:
                cuda = parse_nvidia_smi_cuda(run_tool(backend, ("nvidia-smi",)))
            except GpuToolError:
                cuda = None
        got.out["runtime"] = f"CUDA {cuda}" if cuda else None
        _nvidia_links(backend, indices, got)
    for info in inventory:  # the session's inventory: the names and arches the picker used
        for key in ("name", "arch", "uuid"):
            if getattr(info, key) is not None or key not in got.by_index[info.index]:
                got.put(info.index, key, getattr(info, key), "the GPU list gave none")
    if got.out["runtime"] is None:
        got.out["why_runtime"] = (
            "no .info/version under $ROCM_PATH or /opt/rocm, and no tool said"
            if vendor == "rocm"
            else "NVML and nvidia-smi gave no CUDA version"
        )
    return got.out


def _nvidia_links(backend: Any, indices: list[int], got: Collect) -> None:
    """Each GPU's connection to each other GPU, from ``nvidia-smi topo -m`` (one call; NVML has no call
    that gives the NVLink count between two GPUs): fixed for a boot, so read once and kept."""
    if len(indices) < 2:
        for i in indices:
            got.put(i, "links", {}, "one GPU")
        return
    try:
        matrix, why = (
            parse_nvidia_topo(run_tool(backend, ("nvidia-smi", "topo", "-m"))),
            "nvidia-smi topo -m has no row",
        )
    except GpuToolError as exc:
        matrix, why = {}, f"nvidia-smi topo -m: {one_line(exc)}"
    listed = {str(i) for i in indices}  # the GPUs the record lists: a GPU the session does not see is left out
    for i in indices:
        row = matrix.get(i)
        got.put(i, "links", None if row is None else {p: v for p, v in row.items() if p in listed}, why)


def read_changing(backend: Any, inventory: list[GpuInfo]) -> Facts:
    """The driver, and per GPU what an administrator changes without a reboot (CHANGING)."""
    indices = sorted(g.index for g in inventory)
    keys = CHANGING["rocm" if backend.vendor == "rocm" else "nvidia"]
    driver, why_driver = None, None
    if backend.vendor == "rocm":
        library = backend.library()
        got = Collect("amdsmi library" if library is not None else "tools", indices)
        if library is not None:
            try:

                def read(lib: Any, handles: list) -> tuple[str | None, str | None]:  # one thread for both
                    for i, h in handles:
                        _rocm_changing_library(lib, i, h, got)
                    return _rocm_driver_library(lib, handles)

                driver, why_driver = library.with_handles(read, backend.tool_timeout)
            except GpuToolError as exc:
                got.fail(str(exc))
        else:
            tool_keys = ("compute_partition", "memory_partition", "power_cap_w")
            version = _rocm_tools(backend, indices, ROCM_SMI_VOLATILE, tool_keys, got)
            driver = f"amdgpu {version}" if version else None
            for key in keys:
                if key not in tool_keys:
                    for i in indices:
                        got.put(i, key, None, LIBRARY_ONLY)
        if driver is None:
            version, why = _file("/sys/module/amdgpu/version")
            driver, why_driver = (f"amdgpu {version}", None) if version else (None, why_driver or why)
    else:
        nv = backend.nvml_module()
        got = Collect("NVML" if nv is not None else "nvidia-smi", indices)
        if nv is not None:
            try:
                call_within(
                    lambda: _each(indices, lambda i: nvidia.changing_nvml(nv, i, got)),
                    backend.tool_timeout,
                    "NVML identity",
                )
                driver = f"nvidia {nvidia.text(nv.nvmlSystemGetDriverVersion())}"
            except Exception as exc:  # NVMLError, a timeout
                got.fail(f"NVML: {one_line(exc)}")
        else:
            version = nvidia.nvidia_smi(backend, indices, keys, got)
            driver = f"nvidia {version}" if version else None
        if driver is None:
            text, why = _file("/proc/driver/nvidia/version")
            version = parse_nvidia_proc_version(text or "")
            driver, why_driver = (f"nvidia {version}", None) if version else (None, why or "no version in it")
    got.out["driver"] = driver
    if driver is None:
        got.out["why_driver"] = why_driver or "not given"
    return got.out


def fixed_source(backend: Any) -> list[str | None]:
    """What a fixed reading rests on besides the boot and the driver: the library's file, else the tools' paths."""
    if backend.vendor == "rocm":
        library = backend.library()
        if library is not None:
            return ["amdsmi", getattr(library.lib, "__file__", None)]
        return ["tools", backend.host.which("rocm-smi"), backend.host.which("amd-smi")]
    nv = backend.nvml_module()
    # "links": readings kept from before the GPU-to-GPU links were read are not taken
    return (
        ["NVML", getattr(nv, "__file__", None), "links"]
        if nv is not None
        else ["nvidia-smi", backend.host.which("nvidia-smi"), "links"]
    )
