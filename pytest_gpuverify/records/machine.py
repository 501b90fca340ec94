"""The artifact's ``machine``: which machine, exactly, a result came from.

What a result depends on beyond the code: the GPU model and arch, each GPU's UUID, serial and VBIOS,
the driver and the GPU runtime on the host, the Linux kernel, the compute and memory partition modes
(MI300/MI355 SPX/DPX/QPX/CPX and NPS1/NPS4; NVIDIA's MIG mode), how many GPUs the host shows, the
power cap, ECC mode and error counts, the clocks' limits, and the physical host behind a pooled
runner label (hostname, machine-id, DMI product and serial where readable, boot id).

A value that could not be read is ``None`` and one line of ``unknowns`` says which and why; nothing
is guessed. The record is read once per session (gpu/identity.py, place/machine.py) and is the same
in every artifact of that session; its digest (:func:`machine_digest`) is sealed in the raw log.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class MachineGpu(_Model):
    """One GPU as the host shows it; ``index`` is the index the visibility variable uses (HIP on
    ROCm, NVML on NVIDIA), the same as the artifact's ``gpus[].index``."""

    index: int
    name: str | None = None
    arch: str | None = None
    uuid: str | None = None
    serial: str | None = None
    vbios: str | None = None  # VBIOS / IFWI version (AMD), VBIOS version (NVIDIA)
    bdf: str | None = None
    compute_partition: str | None = None  # SPX, DPX, TPX, QPX, CPX (AMD Instinct)
    memory_partition: str | None = None  # NPS1, NPS2, NPS4, NPS8 (AMD Instinct)
    mig_mode: str | None = None  # "enabled" / "disabled" (NVIDIA); read, never changed
    # each other GPU (its index) -> the connection, as `nvidia-smi topo -m` names it: "NV18" (18 bonded
    # NVLinks), "SYS"/"NODE"/"PHB"/"PXB"/"PIX" (PCIe paths); {} on a one-GPU host (NVIDIA)
    links: dict[str, str] | None = None
    power_cap_w: float | None = None
    ecc_mode: str | None = None  # "enabled" / "disabled"
    ecc_corrected: int | None = None  # error counts since the driver loaded
    ecc_uncorrected: int | None = None
    sm_mhz_max: float | None = None
    mem_mhz_max: float | None = None


class MachineRecord(_Model):
    vendor: str | None = None  # "rocm" | "nvidia"
    read_with: str | None = None  # "amdsmi library", "rocm-smi", "NVML", "nvidia-smi" (+ sysfs, /proc)
    hostname: str | None = None
    machine_id: str | None = None  # /etc/machine-id: the installed system
    boot_id: str | None = None  # /proc/sys/kernel/random/boot_id: this boot
    dmi_product: str | None = None  # /sys/class/dmi/id: vendor and product name
    dmi_serial: str | None = None  # readable by root only on most hosts
    kernel: str | None = None
    driver: str | None = None  # "amdgpu 6.12.12", "nvidia 570.133.20"
    runtime: str | None = None  # "ROCm 6.4.1", "CUDA 12.8" (the driver's CUDA version)
    gpus_visible: int | None = None  # how many GPUs (or partitions) the host shows
    gpus: list[MachineGpu] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)  # "vbios of gpu 2: <why>": each fact left null
    kept_from: str | None = None  # the facts fixed for a boot came from an earlier session (when)


def machine_digest(record: MachineRecord | None) -> str | None:
    """The record's sha256 over its JSON with sorted keys: the raw log seals this, check recomputes it."""
    if record is None:
        return None
    text = json.dumps(record.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def held(record: MachineRecord, indices: Iterable[int | None]) -> list[MachineGpu]:
    """The record's GPUs among ``indices`` (a run's held GPUs); all of them when none is given or found."""
    wanted = {i for i in indices if i is not None}
    mine = [g for g in record.gpus if g.index in wanted]
    return mine or list(record.gpus)


def joined(values: Iterable[object]) -> str | None:
    """Distinct values in first-seen order, ``", "``-joined; None when every value is unknown."""
    seen = list(dict.fromkeys(str(v) for v in values if v is not None))
    return ", ".join(seen) if seen else None


def power_text(watts: float | None) -> str | None:
    return None if watts is None else f"{watts:g} W"


def partition_text(gpu: MachineGpu) -> str | None:
    """ "SPX/NPS1", "MIG enabled", or None where the GPU has no partition mode read."""
    if gpu.compute_partition or gpu.memory_partition:
        return f"{gpu.compute_partition or '?'}/{gpu.memory_partition or '?'}"
    return f"MIG {gpu.mig_mode}" if gpu.mig_mode else None


def links_text(gpus: list[MachineGpu]) -> str | None:
    """ "links NV18" between the held GPUs (of all GPUs when one is held); None where none was read."""
    wanted = {str(g.index) for g in gpus} if len(gpus) > 1 else None
    kinds = (v for g in gpus for peer, v in (g.links or {}).items() if wanted is None or peer in wanted)
    shown = joined(kinds)
    return f"links {shown}" if shown else None


def machine_line(record: MachineRecord | None, indices: Iterable[int | None] = ()) -> str:
    """One line for a summary header or ``doctor``: model and arch, count, driver, runtime, partition,
    power cap, kernel and host."""
    if record is None:
        return "not read"
    gpus = held(record, indices)
    parts = [
        joined(f"{g.name or '?'} {g.arch or '?'}" for g in gpus) or "no GPU",
        f"{record.gpus_visible if record.gpus_visible is not None else '?'} visible",
        record.driver or "driver unknown",
        record.runtime or "runtime unknown",
        joined(partition_text(g) for g in gpus),
        links_text(gpus),
        joined(power_text(g.power_cap_w) for g in gpus),
        f"kernel {record.kernel or '?'}",
        f"host {record.hostname or '?'} (machine-id {(record.machine_id or '?')[:12]}, boot {(record.boot_id or '?')[:8]})",
    ]
    return ", ".join(p for p in parts if p)
