"""The machine's identity for a session (records/machine.py), read once per session, its fixed part
kept across sessions.

The part that holds for a boot and a driver (each GPU's name, arch, UUID, serial, VBIOS, bus address;
the runtime installed) is kept in the facts cache (facts_cache.py) under what it rests on: the boot id,
the host, the driver version, what read it (the library's file, the tools' paths) and the GPU list; a
reboot, a driver reload, another ROCm or a GPU more or less finds no entry. The rest (the driver,
partition modes, power cap, ECC, clock limits) is read every session: an administrator changes those
without a reboot. A reading that failed outright is not kept.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.gpu.identity import CHANGING, FIXED, fixed_source, host_facts, read_changing, read_fixed
from pytest_gpuverify.place.facts_cache import FactsCache, cache_key
from pytest_gpuverify.records.machine import MachineGpu, MachineRecord

READ_WITH_FILES = "sysfs, /proc"


def read_machine(backend: Any, inventory: list[GpuInfo], cache: FactsCache | None = None) -> MachineRecord:
    """The identity of this machine and its GPUs (``inventory``: the session's GPU list). Never raises:
    what could not be read is null, with a line of ``unknowns`` saying why."""
    with PROFILE.phase("machine identity"):
        host, unknowns = host_facts()
        changing = read_changing(backend, inventory)
        key = None
        if cache is not None and host.get("boot_id"):
            key = cache_key(
                "machine",
                host["boot_id"],
                host["hostname"],
                backend.vendor,
                changing.get("driver"),
                fixed_source(backend),
                [[g.index, g.uuid, g.name, g.arch] for g in inventory],
            )
        fixed = cache.get(key) if cache is not None and key is not None else None
        kept_from = None
        if fixed is not None:
            kept_from = f"an earlier session of this boot ({fixed.get('read_at', '?')})"
        else:
            fixed = read_fixed(backend, inventory)
            fixed["read_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if cache is not None and key is not None and not fixed.get("failed"):
                cache.put(key, fixed)
        return assemble(backend.vendor, host, fixed, changing, unknowns, kept_from)


def assemble(
    vendor: str, host: dict, fixed: dict, changing: dict, unknowns: list[str], kept_from: str | None = None
) -> MachineRecord:
    """The record from the host's facts and the two readings (gpu/identity.py)."""
    gpus: dict[int, dict] = {}
    for part in (fixed, changing):
        for facts in part.get("gpus", []):
            gpus.setdefault(int(facts["index"]), {}).update(
                {k: v for k, v in facts.items() if k in MachineGpu.model_fields and k != "index"}
            )
    unknowns = list(unknowns)
    fixed_keys = (*FIXED, "links") if vendor == "nvidia" else FIXED
    for part, keys in ((fixed, fixed_keys), (changing, CHANGING["rocm" if vendor == "rocm" else "nvidia"])):
        why = part.get("why", {})
        for key in keys:
            missing = sorted(i for i, g in gpus.items() if g.get(key) is None)
            by_reason: dict[str, list[int]] = {}
            for i in missing:
                by_reason.setdefault(why.get(key, {}).get(str(i), "not read"), []).append(i)
            unknowns += [f"{key} of gpu {', '.join(map(str, idx))}: {reason}" for reason, idx in by_reason.items()]
        unknowns += [f"failed: {what}" for what in part.get("failed", [])]
    if not gpus:
        unknowns.append("gpus_visible: the session has no GPU list (its GPU tools gave none)")
    for key, part in (("runtime", fixed), ("driver", changing)):
        if part.get(key) is None:
            unknowns.append(f"{key}: {part.get('why_' + key, 'not read')}")
    read_with = (
        fixed.get("read_with")
        if fixed.get("read_with") == changing.get("read_with")
        else f"{fixed.get('read_with')} (fixed facts), {changing.get('read_with')}"
    )
    return MachineRecord(
        vendor=vendor,
        read_with=f"{read_with}; {READ_WITH_FILES}",
        hostname=host.get("hostname"),
        machine_id=host.get("machine_id"),
        boot_id=host.get("boot_id"),
        dmi_product=host.get("dmi_product"),
        dmi_serial=host.get("dmi_serial"),
        kernel=host.get("kernel"),
        driver=changing.get("driver"),
        runtime=fixed.get("runtime"),
        gpus_visible=len(gpus) if gpus else None,
        gpus=[MachineGpu(index=i, **facts) for i, facts in sorted(gpus.items())],
        unknowns=unknowns,
        kept_from=kept_from,
    )
