"""The simulated ROCm host's state: which GPUs exist and what each is doing.

The simulated tools (``tools/``) read this file on every call, so a test changes what they print by
saving a new state; saving is atomic because a tool may read while a test writes.
The JSON written here is all the tools and this package share, which cannot import pydantic.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pytest_gpuverify.common.files import write_atomic
from pytest_gpuverify.simulator.sysfs import write_tree

# the one copy: the tools are stdlib-only (they run in bare containers), so this side imports theirs
from pytest_gpuverify.simulator.tools.gpuverify_sim_common import ver as version_tuple

MIB = 1 << 20
GIB = 1 << 30
IDLE_VRAM = 283 * MIB  # what an idle MI300X reports in use (driver reservations), never 0
FAULT_KINDS = ("garbage", "empty", "hang", "fail")
TOOL_NAMES = ("rocm-smi", "amd-smi", "rocminfo", "rocprofv3")

# Real 8x MI300X platforms put the OAMs on these buses; any later GPU gets a synthetic one.
_BDFS = ("05", "26", "46", "65", "85", "a6", "c6", "e5")

# arch -> (marketing name, VRAM bytes) so that ``SimState.idle(arch=...)`` looks like that part.
ARCH_DEFAULTS: dict[str, tuple[str, int]] = {
    "gfx942": ("AMD Instinct MI300X", 192 * GIB),
    "gfx950": ("AMD Instinct MI355X", 288 * GIB),
    "gfx90a": ("AMD Instinct MI250X/MI250", 64 * GIB),
    "gfx1100": ("AMD Radeon RX 7900 XTX", 24 * GIB),
}


class SimProcess(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    pid: int
    name: str = "python3"
    vram_bytes: int = 0


class SimGpu(BaseModel):
    """One GPU. Its position in ``SimState.gpus`` is its SMI index (rocm-smi/amd-smi order, BDF-sorted
    on real hosts); its HIP index is the rank of ``node_id`` among all GPUs, as on a real host."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    arch: str = "gfx942"
    name: str = "AMD Instinct MI300X"
    use_pct: int | None = 0  # None: the tool reports N/A / "GPU use Unsupported"
    # epoch seconds: use_pct is read until then, 0 after; a utilisation figure averaged over a span
    # (NVML's) still shows a load that has ended, for that span
    use_until: float | None = None
    vram_used: int = IDLE_VRAM
    vram_total: int = 192 * GIB
    node_id: int | None = None  # KFD node; filled with cpus + position when left out
    bdf: str = ""
    uuid: str = ""  # ROCr form "GPU-<16 hex>", as rocminfo and ROCR_VISIBLE_DEVICES use it
    processes: list[SimProcess] = Field(default_factory=list)
    sm_mhz: int = 2100  # the amdsmi library's clocks, temperature and power (gpu/clocks.py)
    sm_max_mhz: int = 2100
    mem_mhz: int = 1300
    temp_c: int = 45
    power_w: int = 150
    throttle_status: int = 0  # the clock events: the driver's ASIC-independent throttler bits (indep_throttle_status)
    # the machine's identity as the tools and the library print it (gpu/identity.py reads these)
    serial: str = ""  # the board's product serial; filled from the UUID when left out
    vbios: str = "113-M3000100-102"
    compute_partition: str | None = "SPX"  # None: the part has no partition modes (Not supported)
    memory_partition: str | None = "NPS1"
    power_cap_w: float = 750.0
    ecc_enabled: bool = True
    ecc_corrected: int = 0
    ecc_uncorrected: int = 0


class SimState(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    rocm_version: str = "6.4.1"
    amdgpu_version: str = "6.12.12"  # the driver's version: amd-smi version, rocm-smi --showdriverversion, the library
    amd_smi_installed: bool = True
    nonroot_warning: bool = False  # amd-smi: group WARNING as the first stdout line
    lowpower_warning: bool = False  # rocm-smi: runtime-PM WARNING on stderr
    faults: dict[str, str] = Field(default_factory=dict)  # tool -> garbage | empty | hang | fail
    cpus: int = 2
    gpus: list[SimGpu] = Field(default_factory=list)
    # Processes that only opened /dev/kfd: rocm-smi lists them with 0 GPUs and 0 VRAM, amd-smi not at all.
    kfd_only_processes: list[SimProcess] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fill_defaults(self) -> SimState:
        # Resolve defaults here so the state file is explicit and the tools need no defaults logic of their own.
        for tool, kind in self.faults.items():
            if tool not in TOOL_NAMES or kind not in FAULT_KINDS:
                raise ValueError(f"fault {tool}={kind}: tools are {TOOL_NAMES}, kinds {FAULT_KINDS}")
        for i, gpu in enumerate(self.gpus):
            if gpu.node_id is None:
                gpu.node_id = self.cpus + i
            if not gpu.bdf:
                bus = _BDFS[i] if i < len(_BDFS) else f"{(0x05 + 0x20 * i) % 0x100:02x}"
                gpu.bdf = f"0000:{bus}:00.0" if i < 256 else f"0001:{i % 256:02x}:00.0"
            if not gpu.uuid:
                gpu.uuid = "GPU-" + hashlib.sha256(f"{gpu.bdf}/{i}".encode()).hexdigest()[:16]
            if not gpu.serial:
                gpu.serial = str(int(gpu.uuid.split("-", 1)[-1][:10], 16))[:12]
        return self

    @property
    def version(self) -> tuple[int, ...]:
        return version_tuple(self.rocm_version)

    @classmethod
    def idle(cls, gpus: int = 8, arch: str = "gfx942", **fields) -> SimState:
        """``gpus`` idle GPUs of one arch (names and VRAM sizes of the matching Instinct/Radeon part)."""
        name, total = ARCH_DEFAULTS.get(arch, (f"AMD Radeon Graphics ({arch})", 16 * GIB))
        return cls(gpus=[SimGpu(arch=arch, name=name, vram_total=total) for _ in range(gpus)], **fields)

    def set_busy(
        self, i: int, use_pct: int = 95, vram_bytes: int = 80 * GIB, pid: int = 4242, name: str = "python3"
    ) -> SimState:
        """GPU ``i`` (SMI index) runs one process holding ``vram_bytes``; returns self for chaining."""
        gpu = self.gpus[i]
        gpu.use_pct = use_pct
        gpu.vram_used = IDLE_VRAM + vram_bytes
        gpu.processes = [SimProcess(pid=pid, name=name, vram_bytes=vram_bytes)]
        return self

    def set_idle(self, i: int) -> SimState:
        gpu = self.gpus[i]
        gpu.use_pct, gpu.vram_used, gpu.processes = 0, IDLE_VRAM, []
        return self

    def hip_order(self) -> list[int]:
        """SMI indices in HIP order (HIP numbers GPUs by KFD node id)."""
        return sorted(range(len(self.gpus)), key=lambda i: self.gpus[i].node_id or 0)


def save_state(state: SimState, path: Path) -> Path:
    """Write ``state`` to ``path`` atomically, readable by a container user that is not us, and its
    amdgpu sysfs tree beside it (``<folder>/sysfs``)."""
    if not isinstance(state, SimState):
        raise TypeError(f"save_state needs a SimState, got {type(state).__name__}")
    path = Path(path)
    write_atomic(path, state.model_dump_json(indent=2).encode("utf-8"), mode=0o644)
    write_tree(state, path)  # the driver's files follow the state (sysfs.py)
    return path


def load_state(path: Path) -> SimState:
    return SimState.model_validate_json(Path(path).read_text(encoding="utf-8"))
