"""Simulated ``amdsmi`` Python library (the one ROCm ships under ``share/amd_smi``), driven by the
same state file as the simulated tools. ``install()`` copies it to ``<bin>/share/amd_smi/amdsmi/``;
with ``ROCM_PATH=<bin>`` the ROCm backend loads it in-process, as it loads the real one.

The calls and shapes are the 7.0.2 wrapper's: process lists of dicts (``memory_usage.vram_mem`` in
bytes), VRAM in MB, ``gfx_activity`` in percent, ``hip_id`` from the enumeration info (ROCm 6.4+;
before that the call does not exist and KFD node ids give the order). An ``amd-smi`` fault of the
state (fail, garbage, empty) makes every reading raise ``AmdSmiLibraryException``; ``hang`` is
not acted out here (an in-process call cannot be timed out).
"""

import contextlib
import importlib.util
import io
import os
import sys
import time

STATE_PATH = "/nonexistent/sim-state.json"  # install() bakes the state file's path in here
_BIN = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MIB = 1 << 20


class AmdSmiLibraryException(Exception):
    def __init__(self, err_code, err_info=""):
        super().__init__("Error code:\n\t%s | %s" % (err_code, err_info))
        self.err_code, self.err_info = err_code, err_info


class AmdSmiInitFlags:
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1


class AmdSmiClkType:
    SYS = GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4


class AmdSmiTemperatureType:
    EDGE = 0
    HOTSPOT = JUNCTION = 1
    VRAM = 2


class AmdSmiTemperatureMetric:
    CURRENT = 0


class _Handle:
    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return "c_void_p(%d)" % (0x55D0F0 + self.index)


def _load():
    """The state as the tools read it (their defaults filled in); SystemExit when unreadable. The tools'
    module is loaded from its file, never through sys.path: other threads import while a library reads."""
    common = sys.modules.get("gpuverify_sim_common")
    if common is None:
        spec = importlib.util.spec_from_file_location(
            "gpuverify_sim_common", os.path.join(_BIN, "gpuverify_sim_common.py")
        )
        common = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(common)
        sys.modules["gpuverify_sim_common"] = common
    with contextlib.redirect_stderr(io.StringIO()):
        return common.load_state("amdsmi", os.environ.get("GPUVERIFY_SIM_STATE") or STATE_PATH)


_cache: dict = {}  # one reading of every GPU makes a dozen calls: the state (and its /proc scan) is read once for them


def _state():
    path = os.environ.get("GPUVERIFY_SIM_STATE") or STATE_PATH
    try:
        info = os.stat(path)
        key = (path, info.st_mtime_ns, info.st_size)
    except OSError:
        key = None
    kept = _cache.get("state")
    if key is not None and kept is not None and kept[0] == key and time.monotonic() - kept[1] < 0.2:
        st = kept[2]
    else:
        try:
            st = _load()
        except SystemExit:
            raise AmdSmiLibraryException(34, "AMDSMI_STATUS_INIT_ERROR") from None
        _cache["state"] = (key, time.monotonic(), st)
    if (st.get("faults") or {}).get("amd-smi") in ("fail", "garbage", "empty"):
        raise AmdSmiLibraryException(6, "AMDSMI_STATUS_DRM_ERROR")
    return st


_initialised: list[int] = []  # the flags of each amdsmi_init not yet shut down


def amdsmi_init(flag=AmdSmiInitFlags.INIT_AMD_GPUS):
    _state()
    _initialised.append(flag)


def amdsmi_shut_down():
    _initialised.clear()


def _gpu(handle):
    if not _initialised:
        raise AmdSmiLibraryException(32, "AMDSMI_STATUS_NOT_INIT")
    st = _state()
    if not isinstance(handle, _Handle) or handle.index >= len(st["gpus"]):
        raise AmdSmiLibraryException(2, "AMDSMI_STATUS_INVAL")
    return st["gpus"][handle.index], st


def amdsmi_get_processor_handles():
    if not _initialised:
        raise AmdSmiLibraryException(32, "AMDSMI_STATUS_NOT_INIT")
    return [_Handle(i) for i in range(len(_state()["gpus"]))]


def amdsmi_get_gpu_activity(handle):
    g, _ = _gpu(handle)
    use = g.get("use_pct")
    return {"gfx_activity": "N/A" if use is None else int(round(use)), "umc_activity": 0, "mm_activity": "N/A"}


def amdsmi_get_gpu_vram_usage(handle):
    g, _ = _gpu(handle)
    return {"vram_total": g["vram_total"] // MIB, "vram_used": g["vram_used"] // MIB}


def amdsmi_get_gpu_process_list(handle):
    g, st = _gpu(handle)
    procs = [
        {
            "name": p.get("name", "python3"),
            "pid": int(p["pid"]),
            "mem": int(p.get("vram_bytes", 0)),
            "engine_usage": {"gfx": 0, "enc": 0},
            "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": int(p.get("vram_bytes", 0))},
            "cu_occupancy": 0,
        }
        for p in g["processes"]
    ]
    for p in st.get("kfd_only_processes") or []:  # opened /dev/kfd, hold nothing: listed with 0 bytes
        procs.append(
            {
                "name": p.get("name", "python3"),
                "pid": int(p["pid"]),
                "mem": 0,
                "engine_usage": {"gfx": 0, "enc": 0},
                "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": 0},
                "cu_occupancy": 0,
            }
        )
    return procs


def amdsmi_get_clock_info(handle, clk_type):
    g, _ = _gpu(handle)
    mhz = g.get("mem_mhz", 1300) if clk_type == AmdSmiClkType.MEM else g.get("sm_mhz", 2100)
    top = g.get("mem_max_mhz", 1300) if clk_type == AmdSmiClkType.MEM else g.get("sm_max_mhz", 2100)
    return {"clk": mhz, "min_clk": 500, "max_clk": top, "clk_locked": False, "clk_deep_sleep": False}


def amdsmi_get_temp_metric(handle, sensor_type, metric):
    g, _ = _gpu(handle)
    return g.get("temp_c", 45)


def amdsmi_get_power_info(handle):
    g, _ = _gpu(handle)
    watts = g.get("power_w", 150)
    return {
        "current_socket_power": watts,
        "average_socket_power": watts,
        "gfx_voltage": "N/A",
        "soc_voltage": "N/A",
        "mem_voltage": "N/A",
        "power_limit": int(g.get("power_cap_w", 750) * 1e6),
    }


def amdsmi_get_gpu_metrics_info(handle):
    g, _ = _gpu(handle)
    return {
        "temperature_hotspot": g.get("temp_c", 45),
        "throttle_status": g.get("throttle_status", 0),
        "indep_throttle_status": g.get("throttle_status", 0),
    }


def amdsmi_get_gpu_kfd_info(handle):
    g, _ = _gpu(handle)
    return {"kfd_id": 40000 + g["node_id"], "node_id": g["node_id"], "current_partition_id": 0}


def amdsmi_get_gpu_device_bdf(handle):
    g, _ = _gpu(handle)
    return g["bdf"]


def amdsmi_get_gpu_asic_info(handle):
    g, _ = _gpu(handle)
    common = sys.modules["gpuverify_sim_common"]
    dev, cus = common.arch_info(g)[:2]
    return {
        "market_name": g["name"],
        "vendor_id": 0x1002,
        "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
        "subvendor_id": 0x1002,
        "device_id": int(dev, 16),
        "rev_id": 0,
        "asic_serial": "0x" + common.hexid(g).upper(),
        "oam_id": handle.index,
        "num_compute_units": cus,
        "target_graphics_version": g["arch"],
    }


def amdsmi_get_gpu_board_info(handle):
    g, _ = _gpu(handle)
    return {
        "model_number": "102-G30211-00",
        "product_serial": g["serial"],
        "fru_id": "N/A",
        "product_name": g["name"] + " OAM",
        "manufacturer_name": "AMD",
    }


def amdsmi_get_gpu_vbios_info(handle):
    g, _ = _gpu(handle)
    return {
        "name": "AMD " + g["name"],
        "build_date": "2024/05/17 10:06",
        "part_number": g["vbios"],
        "version": g["vbios"],
    }


def amdsmi_get_gpu_driver_info(handle):
    _, st = _gpu(handle)
    return {"driver_name": "amdgpu", "driver_version": st["amdgpu_version"], "driver_date": "2015/01/01 00:00"}


def _partition(handle, key):
    g, _ = _gpu(handle)
    if not g.get(key):  # a part without partition modes
        raise AmdSmiLibraryException(2, "AMDSMI_STATUS_NOT_SUPPORTED")
    return g[key]


def amdsmi_get_gpu_compute_partition(handle):
    return _partition(handle, "compute_partition")


def amdsmi_get_gpu_memory_partition(handle):
    return _partition(handle, "memory_partition")


def amdsmi_get_power_cap_info(handle):
    g, _ = _gpu(handle)
    cap = int(float(g["power_cap_w"]) * 1e6)  # microwatts, as on a Linux host
    return {
        "power_cap": cap,
        "default_power_cap": 750000000,
        "dpm_cap": 2100,
        "min_power_cap": 0,
        "max_power_cap": 750000000,
    }


def amdsmi_get_gpu_ecc_enabled(handle):
    g, _ = _gpu(handle)
    return 0x3FFF if g.get("ecc_enabled", True) else 0  # a bit per block with ECC on


def amdsmi_get_gpu_total_ecc_count(handle):
    g, _ = _gpu(handle)
    return {
        "correctable_count": int(g["ecc_corrected"]),
        "uncorrectable_count": int(g["ecc_uncorrected"]),
        "deferred_count": 0,
    }


def amdsmi_get_gpu_device_uuid(handle):
    g, _ = _gpu(handle)
    return sys.modules["gpuverify_sim_common"].device_uuid(g)  # loaded by _gpu's read of the state


def _enumeration_info(handle):
    g, st = _gpu(handle)
    nodes = sorted(x["node_id"] for x in st["gpus"])
    return {
        "drm_render": 128 + handle.index,
        "drm_card": handle.index,
        "hsa_id": g["node_id"],
        "hip_id": nodes.index(g["node_id"]),
        "hip_uuid": g["uuid"],
    }


def __getattr__(name):  # the enumeration call arrived with ROCm 6.4
    if name == "amdsmi_get_gpu_enumeration_info":
        try:
            v = _load()["v"]
        except SystemExit:
            v = ()
        if v >= (6, 4):
            return _enumeration_info
    raise AttributeError("module 'amdsmi' has no attribute %r" % name)
