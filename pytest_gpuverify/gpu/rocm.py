"""ROCm backend: GPU state from ``amd-smi`` JSON (else ``rocm-smi``), arch from ``rocminfo``.

Every index this backend hands out is a HIP index, because that is what ``HIP_VISIBLE_DEVICES``
means; the SMI tools number devices their own way (rocm-smi by PCI BDF since 6.1.0, amd-smi by
discovery), so each tool's order is mapped once per session through KFD node ids or ``hip_id``.
The format parsing lives in :mod:`.rocm_formats` (pure functions, re-exported here).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

from pytest_gpuverify.execute.host_commands import CommandResult, HostRunner
from pytest_gpuverify.gpu.amdgpu_sysfs import read_sysfs_why
from pytest_gpuverify.gpu.base import GpuInfo, GpuReading, GpuToolError, output_tail
from pytest_gpuverify.gpu.clocks import ClockSample
from pytest_gpuverify.gpu.rocm_formats import (
    AmdSmiDevice,
    RocmSmiPid,
    RocmSmiProduct,
    attribute_rocm_smi_processes,
    drop_kfd_only,
    extract_json,
    hip_indices_from_amd_smi,
    hip_indices_from_nodes,
    parse_amd_smi_list,
    parse_amd_smi_metric,
    parse_amd_smi_process,
    parse_amd_smi_static,
    parse_rocm_smi_json,
    parse_rocm_smi_productname_json,
    parse_rocm_smi_showpidgpus,
    parse_rocm_smi_showpids,
    parse_rocm_smi_text,
)
from pytest_gpuverify.gpu.rocminfo import RocminfoAgent, parse_rocminfo_arch, parse_rocminfo_gpus

__all__ = [
    "AmdSmiDevice",
    "RocmBackend",
    "RocminfoAgent",
    "RocmSmiPid",
    "RocmSmiProduct",
    "attribute_rocm_smi_processes",
    "drop_kfd_only",
    "extract_json",
    "hip_indices_from_amd_smi",
    "hip_indices_from_nodes",
    "parse_amd_smi_list",
    "parse_amd_smi_metric",
    "parse_amd_smi_process",
    "parse_amd_smi_static",
    "parse_rocm_smi_json",
    "parse_rocm_smi_productname_json",
    "parse_rocm_smi_showpidgpus",
    "parse_rocm_smi_showpids",
    "parse_rocm_smi_text",
    "parse_rocminfo_arch",
    "parse_rocminfo_gpus",
]

AMD_METRIC = ("amd-smi", "metric", "-u", "-m", "--json")
AMD_PROCESS = ("amd-smi", "process", "--json")
RSMI_STATE = ("rocm-smi", "--showuse", "--showmeminfo", "vram", "--json")
# One call for both: the PID table and the PID->card list then describe the same instant.
RSMI_PIDS = ("rocm-smi", "--showpids", "--showpidgpus")
RSMI_PRODUCT = ("rocm-smi", "--showproductname", "--json")
SYSFS_ROOT_VAR = "GPUVERIFY_SYSFS_ROOT"  # where the amdgpu driver's files are read ("/" on a real host)


class RocmBackend:
    vendor = "rocm"
    visible_devices_var = "HIP_VISIBLE_DEVICES"

    def __init__(
        self,
        host: HostRunner,
        tool_timeout: float = 20.0,
        use_library: bool | None = None,
        sysfs_root: str | None = None,
    ) -> None:
        """``use_library``: None: the ``amdsmi`` library in-process when the host is this machine and
        it loads (:mod:`.amdsmi_lib`), else the tools; False: the tools only. Readings come first from
        the amdgpu driver's sysfs under ``sysfs_root`` (else ``$GPUVERIFY_SYSFS_ROOT``, else "/") when
        the host is this machine (:mod:`.amdgpu_sysfs`)."""
        self.host = host
        self.tool_timeout = tool_timeout
        local = getattr(host, "name", None) == "local"
        environ = getattr(host, "environ", None) or {}
        # None: not this machine's files to read (a remote host), or sysfs gave no reading once
        self.sysfs_root: str | None = (sysfs_root or environ.get(SYSFS_ROOT_VAR) or "/") if local else None
        self.sysfs_why: str | None = None if local else "not this machine"  # why sysfs is not read
        self._sysfs_seen = False  # a reading came from it
        if use_library and not local:
            raise ValueError(
                f"the amdsmi library reads only this machine; host {host.name!r} needs use_library=False or None"
            )
        self.use_library = local if use_library is None else use_library
        self._library = None  # loaded on the first reading
        self.library_why: str | None = None  # why the library is not used
        self.notes: list[str] = []  # each time the backend left its preferred path, and why (for `doctor`)
        self._which: dict[str, bool] = {}
        self._prefer_rocm_smi = False  # set once amd-smi failed: a broken tool would cost every sample
        self._amd_devices: list[AmdSmiDevice] | None = None
        self._rsmi_products: list[RocmSmiProduct] | None = None
        self._rocminfo: str | None = None
        self._inventory: list[GpuInfo] | None = None
        # The sampler reads from its own thread while the session asks for the inventory: one lock
        # keeps each once-per-session lookup from running twice (or half-filled) under that overlap.
        self._cache_lock = threading.RLock()
        # rocminfo has a lock of its own: the host's arch is read alongside the first readings
        # (container_checks.start_gpus), which must not wait behind it for the cache lock
        self._rocminfo_lock = threading.Lock()
        # threads for the two calls of a reading (two readings may overlap), made on first use
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------------------ plumbing
    def _has(self, tool: str) -> bool:
        if tool not in self._which:
            self._which[tool] = self.host.which(tool) is not None
        return self._which[tool]

    def _note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def _run(self, argv: Sequence[str]) -> CommandResult:
        """Run a tool; raise GpuToolError (naming it) when it is missing, hangs or exits non-zero.
        rocm-smi exits 0 even when it failed, so its output is judged by the parsers instead."""
        res = self.host.run(list(argv), timeout=self.tool_timeout)
        if res.missing:
            raise GpuToolError(f"{argv[0]}: not found on {self.host.name}")
        if res.timed_out:
            raise GpuToolError(f"{argv[0]}: no answer within {self.tool_timeout:g} s ({' '.join(argv)})")
        if res.returncode != 0:
            raise GpuToolError(res.describe())
        return res

    @staticmethod
    def _unusable(res: CommandResult, why: str) -> GpuToolError:
        return GpuToolError(f"{' '.join(res.argv)}: {why}{output_tail(res, 120)}")

    def _apply_map(self, hip: dict[int, int], indices: list[int], tool: str) -> dict[int, int]:
        if set(indices) <= set(hip):
            return hip
        self._note(f"{tool}: no HIP order for devices {sorted(set(indices) - set(hip))}; using {tool}'s own order")
        return {i: i for i in indices}

    # ------------------------------------------------------------------------------ readings
    def read(self) -> list[GpuReading]:
        readings = self._sysfs_reading()
        if readings is not None:
            return readings
        library = self._loaded_library()
        if library is not None:
            try:
                return library.read(timeout_s=self.tool_timeout)
            except GpuToolError as exc:
                with self._cache_lock:
                    self._library, self.use_library, self.library_why = None, False, str(exc)
                library.close()
                self._note(f"amdsmi library unusable, the tools read from now on: {exc}")
        has_amd, has_rsmi = self._has("amd-smi"), self._has("rocm-smi")
        if not has_amd and not has_rsmi:
            raise GpuToolError(f"neither amd-smi nor rocm-smi found on {self.host.name}")
        errors: list[str] = []
        if has_amd and not self._prefer_rocm_smi:
            try:
                return self._read_amd_smi()
            except GpuToolError as exc:
                if not has_rsmi:
                    raise
                errors.append(str(exc))
                self._prefer_rocm_smi = True
                self._note(f"amd-smi unusable, rocm-smi used from now on: {exc}")
        try:
            return self._read_rocm_smi()
        except GpuToolError as exc:
            errors.append(str(exc))
        raise GpuToolError("; ".join(errors))

    def _sysfs_reading(self) -> list[GpuReading] | None:
        """The driver's files' reading, or None (and from then on the next sources read: a host
        without them would otherwise pay a failed look on every reading)."""
        root = self.sysfs_root
        if root is None:
            return None
        readings, why = read_sysfs_why(root)
        if readings is not None:
            self._sysfs_seen = True
            return readings
        with self._cache_lock:
            self.sysfs_root, self.sysfs_why = None, why
        if root != "/" or os.path.isdir(os.path.join(root, "sys/class/kfd")):  # no amdgpu at all: nothing to say
            self._note(f"amdgpu sysfs gave no reading, the next source reads from now on: {why}")
        return None

    def _run_pair(self, first: Sequence[str], second: Sequence[str]) -> tuple[CommandResult, CommandResult]:
        """Both halves of a reading at once: they describe the same moment and cost one call's time
        (the re-check under the lock sits between a lock release and the next command)."""
        with self._cache_lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gpuverify-rocm")
        later = self._pool.submit(self._run, second)
        try:
            return self._run(first), later.result()
        except BaseException:
            later.cancel()
            raise

    def _read_amd_smi(self) -> list[GpuReading]:
        res, proc_res = self._run_pair(AMD_METRIC, AMD_PROCESS)
        metrics = parse_amd_smi_metric(res.text())
        if not metrics:
            raise self._unusable(res, "no GPU in its output")
        res = proc_res
        procs = parse_amd_smi_process(res.text())
        if procs is None:
            raise self._unusable(res, "no process list in its output")
        hip = self._apply_map(hip_indices_from_amd_smi(self._amd_smi_devices()), [m.index for m in metrics], "amd-smi")
        return sorted(
            (
                GpuReading(
                    index=hip[m.index],
                    use_pct=m.use_pct,
                    vram_used_bytes=m.vram_used_bytes,
                    vram_total_bytes=m.vram_total_bytes,
                    processes=tuple(drop_kfd_only(procs.get(m.index, []))),
                )
                for m in metrics
            ),
            key=lambda r: r.index,
        )

    def _read_rocm_smi(self) -> list[GpuReading]:
        res, pid_res = self._run_pair(RSMI_STATE, RSMI_PIDS)
        readings = parse_rocm_smi_json(res.text())
        if not readings:
            raise self._unusable(res, "no card in its JSON")
        res = pid_res
        pids = parse_rocm_smi_showpids(res.text())
        if pids is None:
            raise self._unusable(res, "no KFD process table")
        cards = [r.index for r in readings]
        per_card = attribute_rocm_smi_processes(pids, parse_rocm_smi_showpidgpus(res.text()), cards)
        nodes = {p.card: p.node_id for p in self._rocm_smi_products()}
        hip = self._apply_map(hip_indices_from_nodes(nodes), cards, "rocm-smi")
        return sorted(
            (
                GpuReading(
                    index=hip[r.index],
                    use_pct=r.use_pct,
                    vram_used_bytes=r.vram_used_bytes,
                    vram_total_bytes=r.vram_total_bytes,
                    processes=tuple(per_card[r.index]),
                )
                for r in readings
            ),
            key=lambda r: r.index,
        )

    def clocks(self, indices: list[int]) -> list[ClockSample]:
        """Clocks of the GPUs ``indices`` (the amdsmi library); GpuToolError where the tools read (clocks.py)."""
        library = self._loaded_library()
        if library is None:
            raise GpuToolError(f"clocks are read through the amdsmi library only ({self.library_why or 'not loaded'})")
        return library.clocks(indices, timeout_s=self.tool_timeout)

    def reading_source(self) -> str:
        root = self.sysfs_root
        if root is not None and (self._sysfs_seen or self._sysfs_reading() is not None):
            return "amdgpu sysfs" + ("" if root == "/" else f" under {root}")
        if self._loaded_library() is not None:
            return "amdsmi library, in-process"
        tool = "rocm-smi" if self._prefer_rocm_smi or not self._has("amd-smi") else "amd-smi"
        return f"{tool} (amdsmi library not used: {self.library_why})" if self.library_why else tool

    def library(self):
        """The amdsmi library in-process (:class:`.amdsmi_lib.AmdSmiLibrary`), or None where the tools read."""
        return self._loaded_library()

    def amd_smi_hip_indices(self) -> dict[int, int]:
        """amd-smi's index -> HIP index (``amd-smi list``, read once); empty when amd-smi gave no order."""
        return hip_indices_from_amd_smi(self._amd_smi_devices())

    def _loaded_library(self):
        """The amdsmi library, loaded on first use (None: the tools read)."""
        if not self.use_library:
            return None
        with self._cache_lock:
            if self._library is None and self.use_library:
                from pytest_gpuverify.gpu.amdsmi_lib import AmdSmiLibrary

                self._library, self.library_why = AmdSmiLibrary.load(getattr(self.host, "environ", None) or {})
                self.use_library = self._library is not None
            return self._library

    # ------------------------------------------------------------------------------ cached lookups
    def _amd_smi_devices(self) -> list[AmdSmiDevice]:
        """``amd-smi list -e`` (hip_id, 25.3+), else plain ``list`` (node_id); read once."""
        with self._cache_lock:
            return self._amd_smi_devices_locked()

    def _amd_smi_devices_locked(self) -> list[AmdSmiDevice]:
        if self._amd_devices is None:
            devices: list[AmdSmiDevice] = []
            for argv in (("amd-smi", "list", "-e", "--json"), ("amd-smi", "list", "--json")):
                try:
                    devices = parse_amd_smi_list(self._run(argv).text()) or devices
                except GpuToolError as exc:
                    self._note(f"{' '.join(argv)} failed: {exc}")
                if devices and all(d.hip_id is not None for d in devices):
                    break
            if not hip_indices_from_amd_smi(devices):
                self._note("amd-smi gave neither hip_id nor KFD node ids; assuming amd-smi order = HIP order")
            self._amd_devices = devices
        return self._amd_devices

    def _rocm_smi_products(self) -> list[RocmSmiProduct]:
        with self._cache_lock:
            return self._rocm_smi_products_locked()

    def _rocm_smi_products_locked(self) -> list[RocmSmiProduct]:
        if self._rsmi_products is None:
            products: list[RocmSmiProduct] = []
            try:
                products = parse_rocm_smi_productname_json(self._run(RSMI_PRODUCT).text())
            except GpuToolError as exc:
                self._note(f"rocm-smi --showproductname failed: {exc}")
            if not hip_indices_from_nodes({p.card: p.node_id for p in products}):
                self._note("rocm-smi --showproductname gave no KFD Node IDs; assuming rocm-smi order = HIP order")
            self._rsmi_products = products
        return self._rsmi_products

    def _rocminfo_text(self) -> str:
        with self._rocminfo_lock:
            return self._rocminfo_text_locked()

    def _rocminfo_text_locked(self) -> str:
        if self._rocminfo is None:
            try:
                self._rocminfo = self._run(("rocminfo",)).text()
            except GpuToolError as exc:
                self._note(f"rocminfo failed: {exc}")
                self._rocminfo = ""
        return self._rocminfo

    # ------------------------------------------------------------------------------ inventory
    def inventory(self) -> list[GpuInfo]:
        with self._cache_lock:
            if self._inventory is None:
                self._inventory = self._build_inventory()
            return list(self._inventory)

    def _smi_inventory(self) -> tuple[list[tuple[GpuInfo, int | None]], bool]:
        """(GpuInfo in HIP order, KFD node) per GPU from amd-smi or rocm-smi, and whether the SMI
        name beats rocminfo's (amd-smi market_name does; rocm-smi Card Series is often a code name)."""
        library = self._loaded_library()
        if library is not None:  # what `amd-smi static --asic` and `list -e` say, without their processes
            try:
                return library.static(timeout_s=self.tool_timeout), True
            except GpuToolError as exc:
                self._note(f"amdsmi library gave no GPU list, the tools read it: {exc}")
        if self._has("amd-smi") and not self._prefer_rocm_smi:
            try:
                statics = parse_amd_smi_static(self._run(("amd-smi", "static", "--asic", "--json")).text())
            except GpuToolError as exc:
                statics = []
                self._note(f"amd-smi static failed: {exc}")
            if statics:
                devices = {d.gpu: d for d in self._amd_smi_devices()}
                hip = self._apply_map(
                    hip_indices_from_amd_smi(list(devices.values())), [s.index for s in statics], "amd-smi"
                )
                rows = []
                for s in statics:
                    dev = devices.get(s.index)
                    uuid = (dev.hip_uuid or dev.uuid) if dev else None
                    rows.append(
                        (GpuInfo(index=hip[s.index], arch=s.arch, name=s.name, uuid=uuid), dev.node_id if dev else None)
                    )
                return rows, True
        if self._has("rocm-smi"):
            products = self._rocm_smi_products()
            hip = self._apply_map(
                hip_indices_from_nodes({p.card: p.node_id for p in products}), [p.card for p in products], "rocm-smi"
            )
            return [(GpuInfo(index=hip[p.card], arch=p.gfx, name=p.series), p.node_id) for p in products], False
        return [], False

    def _build_inventory(self) -> list[GpuInfo]:
        smi, smi_name_first = self._smi_inventory()
        agents = sorted(parse_rocminfo_gpus(self._rocminfo_text()), key=lambda a: (a.node is None, a.node or 0))
        if not smi and not agents:
            raise GpuToolError(f"no GPU found on {self.host.name}: " + "; ".join(self.notes))
        if not smi:
            return [GpuInfo(index=i, arch=a.arch, name=a.name, uuid=a.uuid) for i, a in enumerate(agents)]
        # rocminfo honours ROCR_VISIBLE_DEVICES, so match its agents by KFD node, by position only without nodes
        by_node = {a.node: a for a in agents if a.node is not None}
        out = []
        for info, node in smi:
            agent = (
                by_node.get(node) if node is not None else (agents[info.index] if info.index < len(agents) else None)
            )
            if agent is not None:
                # rocminfo's arch first: rocm-smi's GFX Version was wrong on MI2xx before 6.3 ("gfx9010")
                name = (info.name or agent.name) if smi_name_first else (agent.name or info.name)
                info = GpuInfo(index=info.index, arch=agent.arch or info.arch, name=name, uuid=agent.uuid or info.uuid)
            out.append(info)
        return sorted(out, key=lambda g: g.index)

    def host_arch(self) -> str | None:
        """The first GPU agent's gfx target from rocminfo, else the first inventory arch."""
        arch = parse_rocminfo_arch(self._rocminfo_text())
        if arch:
            return arch
        return next((g.arch for g in self.inventory() if g.arch), None)

    def visible_value(self, gpus: list[GpuInfo]) -> str:
        return ",".join(str(g.index) for g in gpus)
