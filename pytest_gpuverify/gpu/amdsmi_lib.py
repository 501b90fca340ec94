"""GPU readings from ROCm's ``amdsmi`` Python library, in-process, where it loads: the ROCm twin of
NVML. An ``amd-smi`` call starts a Python and initialises the library every time; the re-check
under a GPU lock sits between one run's end and the next one's start, so the library's
milliseconds matter there.

The module is ROCm's own (``$ROCM_PATH/share/amd_smi``, ``/opt/rocm/share/amd_smi``) or a pip
install. A mismatched one is common: ``import amdsmi`` then prints to stdout and raises a KeyError,
or an undefined symbol; the PyPI wrapper also changed shapes over the versions (process lists of
dicts, or of handles for ``amdsmi_get_gpu_process_info``). Any of that makes :func:`load` say why
not, and any unexpected value in a reading raises :class:`.base.GpuToolError`: the backend then
reads with the ``amd-smi``/``rocm-smi`` tools instead, for the rest of the session.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.gpu.base import GpuInfo, GpuProcess, GpuReading, GpuToolError, call_within
from pytest_gpuverify.gpu.clocks import ClockSample, amdsmi_clocks
from pytest_gpuverify.gpu.rocm_formats import AmdSmiDevice, _arch, _str, drop_kfd_only, hip_indices_from_amd_smi

MIB = 1 << 20
T = TypeVar("T")
SEARCH = ("{ROCM_PATH}/share/amd_smi", "/opt/rocm/share/amd_smi")  # where ROCm installs the module


def _import_amdsmi(environ: Mapping[str, str]) -> tuple[Any, str | None]:
    """(module, None), or (None, why not). The import's own prints (a missing libamd_smi.so) are
    swallowed: they must not land in pytest's output. ROCm's folders are searched without touching
    ``sys.path``: other threads import meanwhile (the docker SDK, pytest's collection), and an entry
    inserted or removed under their import's walk of it makes them skip one ("No module named ...")."""
    why = "no amdsmi module"
    dirs = [None] + [d.format(ROCM_PATH=environ.get("ROCM_PATH", "/opt/rocm")) for d in SEARCH]
    for where in dirs:
        if where is not None and not os.path.isdir(os.path.join(where, "amdsmi")):
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                return (_load_from(where) if where is not None else importlib.import_module("amdsmi")), None
        except ModuleNotFoundError as exc:
            if exc.name != "amdsmi":  # it is there, but something it imports is not
                why = f"amdsmi{' from ' + where if where else ''} does not load: {exc}"
        except Exception as exc:  # KeyError 'libamd_smi.so', OSError undefined symbol, ImportError
            why = f"amdsmi{' from ' + where if where else ''} does not load: {type(exc).__name__}: {exc}"
        # list() copies the keys at once: a walk over sys.modules itself meets other threads' imports
        for name in [m for m in list(sys.modules) if m == "amdsmi" or m.startswith("amdsmi.")]:
            sys.modules.pop(name, None)  # the next place tried imports afresh
    return None, why


def _load_from(folder: str) -> Any:
    """The ``amdsmi`` package in ``folder``, imported as ``amdsmi`` (its own imports of its modules
    find them through the package), with ``sys.path`` left as it is."""
    spec = importlib.machinery.PathFinder.find_spec("amdsmi", [folder])
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no amdsmi in {folder}", name="amdsmi")
    module = importlib.util.module_from_spec(spec)
    sys.modules["amdsmi"] = module
    spec.loader.exec_module(module)
    return module


class AmdSmiLibrary:
    """The loaded library and its GPUs, HIP-indexed. Calls are serialised: the sampler's thread and
    the picker's re-check may read at once."""

    def __init__(self, module: Any) -> None:
        self.lib = module
        self._lock = threading.Lock()
        self._handles: list[tuple[int, Any]] = []  # (HIP index, processor handle)

    @classmethod
    def load(cls, environ: Mapping[str, str] = os.environ) -> tuple[AmdSmiLibrary | None, str | None]:
        """(library, None) when it loads, initialises and lists GPUs; else (None, why not)."""
        module, why = _import_amdsmi(environ)
        if module is None:
            return None, why
        lib = cls(module)
        try:
            with PROFILE.phase("amdsmi started"):
                lib._init()
        except Exception as exc:
            lib.close()
            return None, f"amdsmi does not initialise: {type(exc).__name__}: {exc}"
        return lib, None

    def _init(self) -> None:
        lib = self.lib
        lib.amdsmi_init(lib.AmdSmiInitFlags.INIT_AMD_GPUS)
        handles = list(lib.amdsmi_get_processor_handles())
        if not handles:
            raise GpuToolError("amdsmi lists no GPU")
        devices = [AmdSmiDevice(gpu=i, hip_id=self._hip_id(h), node_id=self._node_id(h)) for i, h in enumerate(handles)]
        hip = hip_indices_from_amd_smi(devices)
        if set(hip) != set(range(len(handles))):
            raise GpuToolError("amdsmi gave neither hip_id nor KFD node ids: no HIP order")
        self._handles = sorted((hip[i], h) for i, h in enumerate(handles))

    def _hip_id(self, handle: Any) -> int | None:
        get = getattr(self.lib, "amdsmi_get_gpu_enumeration_info", None)  # ROCm 6.4+
        try:
            value = get(handle).get("hip_id") if get else None
        except Exception:
            return None
        return value if isinstance(value, int) else None

    def _node_id(self, handle: Any) -> int | None:
        try:
            value = self.lib.amdsmi_get_gpu_kfd_info(handle).get("node_id")
        except Exception:
            return None
        return value if isinstance(value, int) else None

    def read(self, timeout_s: float = 20.0) -> list[GpuReading]:
        """One reading of every GPU; :class:`.base.CallTimedOut` past ``timeout_s`` (a hung driver)."""
        return call_within(self._read_locked, timeout_s, "amdsmi")

    def _read_locked(self) -> list[GpuReading]:
        with self._lock:
            try:
                return [self._reading(index, handle) for index, handle in self._handles]
            except GpuToolError:
                raise
            except Exception as exc:  # AmdSmiLibraryException, or a shape this code does not know
                raise GpuToolError(f"amdsmi: {type(exc).__name__}: {exc}") from None

    def _reading(self, index: int, handle: Any) -> GpuReading:
        lib = self.lib
        use = lib.amdsmi_get_gpu_activity(handle).get("gfx_activity")
        vram = lib.amdsmi_get_gpu_vram_usage(handle)  # MB
        used, total = _mb(vram.get("vram_used")), _mb(vram.get("vram_total"))
        processes = [self._process(handle, p) for p in lib.amdsmi_get_gpu_process_list(handle)]
        return GpuReading(
            index=index,
            use_pct=float(use) if isinstance(use, (int, float)) else None,
            vram_used_bytes=used,
            vram_total_bytes=total,
            processes=tuple(drop_kfd_only(processes)),
        )

    def static(self, timeout_s: float = 20.0) -> list[tuple[GpuInfo, int | None]]:
        """(GpuInfo, KFD node) per GPU in HIP order: the asic's market name and gfx target (as
        ``amd-smi static --asic``), the HIP UUID where the enumeration call gives it (as ``list -e``)."""

        def read() -> list[tuple[GpuInfo, int | None]]:
            with self._lock:
                try:
                    return [(self._static(index, handle), self._node_id(handle)) for index, handle in self._handles]
                except GpuToolError:
                    raise
                except Exception as exc:  # AmdSmiLibraryException, or a shape this code does not know
                    raise GpuToolError(f"amdsmi: {type(exc).__name__}: {exc}") from None

        return call_within(read, timeout_s, "amdsmi static")

    def _static(self, index: int, handle: Any) -> GpuInfo:
        asic = self.lib.amdsmi_get_gpu_asic_info(handle)
        if not isinstance(asic, dict):
            raise GpuToolError(f"amdsmi: asic info of GPU {index} is {asic!r}"[:200])
        get = getattr(self.lib, "amdsmi_get_gpu_enumeration_info", None)  # ROCm 6.4+
        try:
            uuid = get(handle).get("hip_uuid") if get else None
        except Exception:
            uuid = None
        if not _str(uuid):  # as the tools' path: the HIP UUID, else the device's own
            with contextlib.suppress(Exception):
                uuid = self.lib.amdsmi_get_gpu_device_uuid(handle)
        return GpuInfo(
            index=index,
            arch=_arch(asic.get("target_graphics_version")),
            name=_str(asic.get("market_name")),
            uuid=_str(uuid),
        )

    def each_gpu(self, fn: Callable[[Any, int, Any], None], timeout_s: float, what: str) -> None:
        """``fn(module, HIP index, handle)`` for every GPU, under the library's lock, within ``timeout_s``."""

        def read() -> None:
            with self._lock:
                for index, handle in self._handles:
                    fn(self.lib, index, handle)

        call_within(read, timeout_s, what)

    def with_handles(self, fn: Callable[[Any, list], T], timeout_s: float) -> T:
        """``fn(module, [(HIP index, handle)...])`` under the library's lock, within ``timeout_s``."""

        def read() -> T:
            with self._lock:
                return fn(self.lib, list(self._handles))

        return call_within(read, timeout_s, "amdsmi")

    def clocks(self, indices: list[int], timeout_s: float = 20.0) -> list[ClockSample]:
        def read() -> list[ClockSample]:
            with self._lock:
                return [amdsmi_clocks(self.lib, h, i) for i, h in self._handles if i in indices]

        return call_within(read, timeout_s, "amdsmi clocks")

    def _process(self, handle: Any, entry: Any) -> GpuProcess:
        if not isinstance(entry, dict):  # ROCm 6.0/6.1: a process handle
            entry = self.lib.amdsmi_get_gpu_process_info(handle, entry)
        usage = entry.get("memory_usage")
        vram = usage.get("vram_mem") if isinstance(usage, dict) else entry.get("mem")
        pid = entry["pid"]
        if not isinstance(pid, int):
            raise GpuToolError(f"amdsmi: a process without a PID: {entry!r}"[:200])
        return GpuProcess(
            pid=pid, name=str(entry.get("name") or ""), vram_bytes=vram if isinstance(vram, int) and vram >= 0 else None
        )

    def close(self) -> None:
        if not self._lock.acquire(timeout=1.0):
            return  # a call hangs in the library: shutting it down would hang too
        try:
            with contextlib.suppress(Exception):
                self.lib.amdsmi_shut_down()
        finally:
            self._lock.release()


def _mb(value: Any) -> int | None:
    return value * MIB if isinstance(value, int) and value >= 0 else None
