"""NVIDIA backend: GPU state from NVML in-process (``nvidia-ml-py``, module ``pynvml``) on the local
host, else from ``nvidia-smi --query-*`` CSV through the :class:`HostRunner`.

Indices are NVML's (PCI bus order), the same as nvidia-smi's. CUDA numbers devices its own way
(``CUDA_DEVICE_ORDER=FASTEST_FIRST`` by default), so :meth:`NvidiaBackend.visible_value` hands out
UUIDs, which mean the same GPU to every tool.

NVML, where it works, is about 1,400 times cheaper than one ``nvidia-smi`` call and sees more:
memory ``_v2`` leaves driver-reserved memory out of "used", and ``nvmlDeviceGetSamples`` returns
every utilisation sample since the previous reading (the driver keeps ~14 s of them), so a burst
between two readings still counts. The nvidia-smi path is a :class:`SmiReader` (:mod:`.nvidia_smi`), its CSV
parsing in :mod:`.nvidia_formats`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.execute.host_commands import HostRunner
from pytest_gpuverify.gpu.base import CallTimedOut, GpuInfo, GpuProcess, GpuReading, GpuToolError, call_within
from pytest_gpuverify.gpu.clocks import ClockSample, nvml_clocks
from pytest_gpuverify.gpu.nvidia_formats import (
    MIB,
    SMI,
    SMI_APPS,  # noqa: F401  (re-exported; used in .nvidia_smi)
    SmiApp,
    SmiGpu,
    arch_from_compute_cap,
    is_uuid,
    parse_compute_apps_csv,
    parse_compute_apps_csv_lines,
    parse_query_gpu_csv,
    parse_query_gpu_csv_lines,
    plausible_bytes,
    smi_query_gpu_argv,
    text_value,
)
from pytest_gpuverify.gpu.nvidia_smi import SmiReader
from pytest_gpuverify.gpu.nvml_history import _SAMPLE_FIELDS, DriverHistory, NoHistory, read_history

__all__ = [
    "MIB",
    "NvidiaBackend",
    "SmiApp",
    "SmiGpu",
    "arch_from_compute_cap",
    "is_uuid",
    "parse_compute_apps_csv",
    "parse_compute_apps_csv_lines",
    "parse_query_gpu_csv",
    "parse_query_gpu_csv_lines",
    "plausible_bytes",
    "smi_query_gpu_argv",
]

# NVML return codes (pynvml constants, spelled out for bindings that lack one)
_NOT_SUPPORTED, _NOT_FOUND, _FUNCTION_NOT_FOUND, _VERSION_MISMATCH = 3, 6, 13, 25
FIRST_READING_SPAN_US = 1_000_000  # timestamps are in microseconds


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


class NvidiaBackend:
    vendor = "nvidia"
    visible_devices_var = "CUDA_VISIBLE_DEVICES"

    def __init__(self, host: HostRunner, tool_timeout: float = 20.0, use_nvml: bool | None = None) -> None:
        """``use_nvml``: None: NVML when the host is this machine and ``pynvml`` initialises, else
        nvidia-smi (and nvidia-smi from the first NVML failure on); True: NVML or GpuToolError;
        False: nvidia-smi only. A remote host is always read through nvidia-smi."""
        if use_nvml and getattr(host, "name", None) != "local":
            raise ValueError(f"NVML reads only this machine; host {host.name!r} needs use_nvml=False or None")
        self.host = host
        self.tool_timeout = tool_timeout
        self.use_nvml = use_nvml
        self.notes: list[str] = []  # each time the backend left its preferred path, and why (for `doctor`)
        self._lock = threading.RLock()  # the sampler thread reads while the session asks for the inventory
        self._nvml_mod: Any = None
        self._nvml_state = "untried"  # "untried" | "on" | "off"
        self._nvml_why = ""
        self._mem_v1 = False  # set once memory _v2 proved missing in this driver/binding
        self._samples_off = False  # set once nvmlDeviceGetSamples proved unsupported
        self._last_ts: dict[int, int] = {}  # per NVML index: newest utilisation sample already seen (us)
        self.smi = SmiReader(host, tool_timeout, self._note)  # the path when NVML is not there
        self._inventory: list[GpuInfo] | None = None

    # ------------------------------------------------------------------------------ plumbing
    def _note(self, message: str) -> None:
        with self._lock:
            if message not in self.notes:
                self.notes.append(message)

    def _nvml(self) -> Any:
        """The initialised ``pynvml`` module, or None where nvidia-smi is to be used."""
        with self._lock:
            if self._nvml_state == "untried":
                self._nvml_state = "off"
                if self.use_nvml is False:
                    self._nvml_why = "NVML disabled (use_nvml=False)"
                elif getattr(self.host, "name", None) != "local":
                    self._nvml_why = f"host {self.host.name} is not this machine"
                else:
                    self._init_nvml()
            if self._nvml_state == "on":
                return self._nvml_mod
            if self.use_nvml:
                raise GpuToolError(f"NVML unavailable: {self._nvml_why}")
            return None

    def _init_nvml(self) -> None:
        with PROFILE.phase("NVML started (pynvml imported, nvmlInit)"):
            self._import_and_init()

    def _import_and_init(self) -> None:
        try:
            import pynvml
        except ImportError as exc:
            self._nvml_why = f"pynvml not importable ({type(exc).__name__}: {exc})"
            if self.use_nvml is None:
                self._note(f"{self._nvml_why}; nvidia-smi used")
            return
        try:
            pynvml.nvmlInit()
        except (pynvml.NVMLError, OSError) as exc:  # no driver, no libnvidia-ml.so.1
            self._nvml_why = f"nvmlInit failed: {type(exc).__name__}: {exc}"
            if self.use_nvml is None:
                self._note(f"{self._nvml_why}; nvidia-smi used")
            return
        self._nvml_mod, self._nvml_state = pynvml, "on"

    def _nvml_failed(self, exc: GpuToolError, shutdown: bool = True) -> None:
        """NVML broke as a whole: from now on nvidia-smi (only in the automatic mode)."""
        with self._lock:
            self._note(f"NVML unusable, nvidia-smi used from now on: {exc}")
            if shutdown:
                self._shutdown_locked()
            self._nvml_mod = None
            self._nvml_state, self._nvml_why = "off", str(exc)

    def _shutdown_locked(self) -> None:
        if self._nvml_state == "on" and self._nvml_mod is not None:
            # NVMLError from a driver that went away: nothing is left to release
            with contextlib.suppress(self._nvml_mod.NVMLError):
                self._nvml_mod.nvmlShutdown()
        self._nvml_mod = None

    def close(self) -> None:
        """Release NVML (``nvmlShutdown``); a later call initialises it again."""
        with self._lock:
            self._shutdown_locked()
            if self._nvml_state == "on":
                self._nvml_state = "untried"

    def reading_source(self) -> str:
        return "NVML, in-process" if self.using_nvml else "nvidia-smi"

    def nvml_module(self) -> Any:
        """The initialised ``pynvml`` module, or None where nvidia-smi reads."""
        try:
            return self._nvml()
        except GpuToolError:
            return None

    @property
    def using_nvml(self) -> bool:
        """Whether readings come from NVML (initialises it on first use)."""
        try:
            return self._nvml() is not None
        except GpuToolError:
            return False

    # ------------------------------------------------------------------------------ readings
    def read(self) -> list[GpuReading]:
        nv = self._nvml()
        if nv is not None:
            try:
                return call_within(lambda: self._read_nvml(nv), self.tool_timeout, "NVML")
            except GpuToolError as exc:
                if self.use_nvml:
                    raise
                # after a hung call, nvmlShutdown could hang as well: leave NVML as it is
                self._nvml_failed(exc, shutdown=not isinstance(exc, CallTimedOut))
        return self.smi.read()

    # -- NVML
    def _nvml_count(self, nv: Any) -> int:
        try:
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            raise GpuToolError(f"NVML nvmlDeviceGetCount: {exc}") from exc
        if count <= 0:
            raise GpuToolError("NVML: no GPU")
        return count

    def _read_nvml(self, nv: Any) -> list[GpuReading]:
        readings = []
        for i in range(self._nvml_count(nv)):
            try:
                handle = nv.nvmlDeviceGetHandleByIndex(i)
            except nv.NVMLError as exc:
                # left out of this reading: the sampler counts a missing GPU as busy
                self._note(f"NVML nvmlDeviceGetHandleByIndex({i}): {exc}")
                continue
            reading = self._nvml_instant(nv, handle, i)
            if reading is not None:
                readings.append(reading.model_copy(update={"use_pct": self._nvml_use(nv, handle, i)}))
        if not readings:
            raise GpuToolError("NVML: no GPU could be read: " + "; ".join(self.notes[-3:]))
        return readings

    def _nvml_instant(self, nv: Any, handle: Any, i: int) -> GpuReading | None:
        """VRAM and processes of this instant (no use); None when the processes cannot be listed."""
        used, total = self._nvml_memory(nv, handle, i)
        procs = self._nvml_processes(nv, handle, i, total)
        if procs is None:
            return None
        return GpuReading(index=i, vram_used_bytes=used, vram_total_bytes=total, processes=procs)

    def history(self, span_s: float) -> tuple[DriverHistory | None, str]:
        """The last ``span_s`` seconds from NVML's sample buffers (:mod:`.nvml_history`), or None and why."""
        nv = self._nvml()
        if nv is None:
            return None, f"{SMI} keeps no history ({self._nvml_why})"
        try:
            got = call_within(lambda: read_history(nv, span_s, self._nvml_instant), self.tool_timeout, "NVML history")
        except NoHistory as exc:
            return None, f"NVML history unusable: {exc}"
        except (GpuToolError, nv.NVMLError) as exc:
            return None, f"NVML history failed: {exc}"
        with self._lock:  # the next reading takes only what came after the history
            for i, ts in got.newest_us.items():
                self._last_ts[i] = max(self._last_ts.get(i, 0), ts)
        return got, ""

    def _nvml_memory(self, nv: Any, handle: Any, i: int) -> tuple[int | None, int | None]:
        """(used, total) bytes; ``_v2`` where it exists, since v1 "used" includes driver-reserved memory."""
        v2 = getattr(nv, "nvmlMemory_v2", None)
        if v2 is None and not self._mem_v1:
            self._mem_v1 = True
            self._note("pynvml has no nvmlMemory_v2: NVML v1 'used' (includes driver-reserved memory) used")
        if not self._mem_v1:
            try:
                mem = nv.nvmlDeviceGetMemoryInfo(handle, version=v2)
                total = plausible_bytes(mem.total)
                return plausible_bytes(mem.used, total), total
            except TypeError as exc:  # bindings whose nvmlDeviceGetMemoryInfo takes no version
                self._mem_v1 = True
                self._note(f"NVML memory v2 not callable ({exc}): v1 'used' (includes driver-reserved memory) used")
            except nv.NVMLError as exc:
                if _code(exc) not in (_FUNCTION_NOT_FOUND, _NOT_SUPPORTED, _VERSION_MISMATCH):
                    self._note(f"NVML memory of GPU {i}: {exc}")
                    return None, None
                self._mem_v1 = True
                self._note(f"NVML memory v2 unavailable ({exc}): v1 'used' (includes driver-reserved memory) used")
        try:
            mem = nv.nvmlDeviceGetMemoryInfo(handle)
        except nv.NVMLError as exc:
            self._note(f"NVML memory of GPU {i}: {exc}")
            return None, None
        total = plausible_bytes(mem.total)
        return plausible_bytes(mem.used, total), total

    def _nvml_use(self, nv: Any, handle: Any, i: int) -> float | None:
        """The highest utilisation sample since the previous reading of this GPU (on the first
        reading: the last second of the driver's buffer); the instantaneous rate when no new sample.

        Only the last second on the first reading: the buffer spans ~14 s, and on the H200 it held
        100 % samples from the driver's own start-up on an otherwise idle GPU (bench/results/h200),
        which the idle window must not inherit from before the session began."""
        if not self._samples_off:
            with self._lock:
                last = self._last_ts.get(i, 0)
            try:
                vtype, samples = nv.nvmlDeviceGetSamples(handle, nv.NVML_GPU_UTILIZATION_SAMPLES, last)
                field = _SAMPLE_FIELDS.get(int(vtype), "uiVal")
                stamps = [int(s.timeStamp) for s in samples]
                if not last and stamps:
                    last = max(stamps) - FIRST_READING_SPAN_US
                fresh = [
                    (int(s.timeStamp), getattr(s.sampleValue, field, None)) for s in samples if int(s.timeStamp) > last
                ]
                if fresh:
                    with self._lock:
                        self._last_ts[i] = max(self._last_ts.get(i, 0), max(ts for ts, _ in fresh))
                    values = [float(v) for _, v in fresh if v is not None and 0 <= v <= 100]
                    if values:
                        return max(values)
            except nv.NVMLError as exc:
                if _code(exc) in (_FUNCTION_NOT_FOUND, _NOT_SUPPORTED):
                    self._samples_off = True
                    self._note(f"NVML nvmlDeviceGetSamples unsupported ({exc}): instantaneous utilisation used")
                elif _code(exc) != _NOT_FOUND:  # NOT_FOUND: no sample since `last`, which is fine
                    self._note(f"NVML nvmlDeviceGetSamples of GPU {i}: {exc}")
        try:
            use = float(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
        except nv.NVMLError as exc:
            self._note(f"NVML nvmlDeviceGetUtilizationRates of GPU {i}: {exc}")
            return None
        return use if 0 <= use <= 100 else None

    def _nvml_processes(self, nv: Any, handle: Any, i: int, total: int | None) -> tuple[GpuProcess, ...] | None:
        """The compute processes, or None (GPU left out of the reading) when NVML could not list them."""
        try:
            procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
        except nv.NVMLError as exc:
            if _code(exc) in (_FUNCTION_NOT_FOUND, _NOT_SUPPORTED):
                # binding/driver skew (bindings >= 11.515 need driver >= 510): the whole path is unusable
                raise GpuToolError(f"NVML nvmlDeviceGetComputeRunningProcesses: {exc}") from exc
            self._note(f"NVML processes of GPU {i}: {exc}")
            return None
        out = []
        for p in procs:
            pid = getattr(p, "pid", None)
            if not isinstance(pid, int):
                continue
            name = ""
            # the name is optional: the process may be gone, or hidden from us, or the binding old
            with contextlib.suppress(nv.NVMLError, AttributeError):
                name = text_value(nv.nvmlSystemGetProcessName(pid)) or ""
            out.append(
                GpuProcess(pid=pid, name=name, vram_bytes=plausible_bytes(getattr(p, "usedGpuMemory", None), total))
            )
        return tuple(out)

    def clocks(self, indices: list[int]) -> list[ClockSample]:
        """Clocks of the GPUs ``indices`` (NVML); GpuToolError where NVML is not used."""
        nv = self._nvml()
        if nv is None:
            raise GpuToolError(f"clocks are read through NVML only ({self._nvml_why})")
        return call_within(
            lambda: [nvml_clocks(nv, nv.nvmlDeviceGetHandleByIndex(i), i) for i in indices],
            self.tool_timeout,
            "NVML clocks",
        )

    # ------------------------------------------------------------------------------ inventory
    def inventory(self) -> list[GpuInfo]:
        with self._lock:
            if self._inventory is None:
                self._inventory = self._build_inventory()
            return list(self._inventory)

    def _build_inventory(self) -> list[GpuInfo]:
        nv = self._nvml()
        if nv is not None:
            try:
                return self._nvml_inventory(nv)
            except GpuToolError as exc:
                if self.use_nvml:
                    raise
                self._nvml_failed(exc)
        return [GpuInfo(index=g.index, arch=g.arch, name=g.name, uuid=g.uuid) for g in self.smi.gpus()]

    def _nvml_inventory(self, nv: Any) -> list[GpuInfo]:
        out = []
        for i in range(self._nvml_count(nv)):
            try:
                handle = nv.nvmlDeviceGetHandleByIndex(i)
            except nv.NVMLError as exc:
                self._note(f"NVML nvmlDeviceGetHandleByIndex({i}): {exc}")
                out.append(GpuInfo(index=i))
                continue
            facts: dict[str, Any] = {}
            for key, fn in (
                ("uuid", "nvmlDeviceGetUUID"),
                ("name", "nvmlDeviceGetName"),
                ("cc", "nvmlDeviceGetCudaComputeCapability"),
            ):
                try:
                    facts[key] = getattr(nv, fn)(handle)
                except nv.NVMLError as exc:
                    self._note(f"NVML {fn} of GPU {i}: {exc}")
            uuid = text_value(facts.get("uuid"))
            cc = facts.get("cc")
            out.append(
                GpuInfo(
                    index=i,
                    arch=arch_from_compute_cap(tuple(cc) if cc is not None else None),
                    name=text_value(facts.get("name")),
                    uuid=uuid if is_uuid(uuid) else None,
                )
            )
        return out

    def host_arch(self) -> str | None:
        """GPU 0's ``sm_XY`` (the analogue of rocminfo's first agent); None when unknown."""
        gpus = self.inventory()
        first = next((g for g in gpus if g.index == 0), gpus[0] if gpus else None)
        return first.arch if first else None

    def visible_value(self, gpus: list[GpuInfo]) -> str:
        """Full UUIDs in the given order: CUDA's index order (FASTEST_FIRST) need not be nvidia-smi's.
        Indices only where a UUID is unknown (for all of them: CUDA takes one kind of list); those
        mean the NVML/PCI order only under ``CUDA_DEVICE_ORDER=PCI_BUS_ID``."""
        if all(is_uuid(g.uuid) for g in gpus):
            return ",".join(str(g.uuid) for g in gpus)
        self._note(
            "a GPU UUID is unknown: CUDA_VISIBLE_DEVICES set to indices, which need "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID to mean nvidia-smi's GPUs"
        )
        return ",".join(str(g.index) for g in gpus)
