"""A Slurm grant cross-checked with the devices the job's cgroup lets it open.

Slurm with ``ConstrainDevices=yes`` puts each job in a cgroup that allows only its granted GPUs' device
files. Under cgroup v1 that list is readable: ``devices.list`` of the process's ``devices`` cgroup (named
in ``/proc/self/cgroup``), one rule a line (``c 226:128 rwm``, ``a *:* rwm`` for everything). Under
cgroup v2 the rules are an eBPF program attached to the cgroup, which cannot be read back: the check
says so and the grant stands as the variables say. A granted GPU whose device file the cgroup does not
allow is a grant that is not this job's (an inherited or edited variable): refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class DeviceCheck:
    said: str  # what the check found, for the session's notes
    refused: str | None = None  # one line naming the GPU, its device and the cgroup's list; None: allowed


def gpu_device_files(indices: list[int], vendor: str) -> dict[int, str]:
    """GPU index -> the device file a runtime opens for it: ROCm's render node (from the KFD topology),
    NVIDIA's ``/dev/nvidia<N>``. GPUs whose file is not known are left out."""
    if vendor == "rocm":
        from pytest_gpuverify.place.ephemeral import render_nodes

        return render_nodes(indices)
    if vendor == "nvidia":
        return {i: f"/dev/nvidia{i}" for i in indices}
    return {}


def devices_list(proc_cgroup: Path = PROC_CGROUP, cgroup_root: Path = CGROUP_ROOT) -> tuple[Path | None, str]:
    """(the ``devices.list`` this process's cgroup v1 keeps, or None; why not, where None)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError as exc:
        return None, f"{proc_cgroup} is not readable ({exc.strerror or exc})"
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "devices" in controllers.split(","):
            for mount in dict.fromkeys((controllers, "devices")):
                candidate = cgroup_root / mount / path.lstrip("/") / "devices.list"
                if candidate.is_file():
                    return candidate, ""
            return None, f"the devices cgroup {path} has no devices.list under {cgroup_root}"
    return None, "cgroup v2 keeps a cgroup's device rules in an eBPF program, which is not readable"


def allows(rules: str, kind: str, major: int, minor: int) -> bool:
    """Whether a ``devices.list`` lets a process read and write device ``kind major:minor``."""
    for rule in rules.splitlines():
        parts = rule.split()
        if len(parts) != 3 or ":" not in parts[1]:
            continue
        rtype, (rmajor, rminor), access = parts[0], parts[1].split(":", 1), parts[2]
        if (
            rtype in ("a", kind)
            and rmajor in ("*", str(major))
            and rminor in ("*", str(minor))
            and {"r", "w"} <= set(access)
        ):
            return True
    return False


def check_grant(
    granted: list[int],
    devices: Mapping[int, str],
    granter: str,
    proc_cgroup: Path = PROC_CGROUP,
    cgroup_root: Path = CGROUP_ROOT,
) -> DeviceCheck:
    """Each granted GPU's device file against the cgroup's list, where both are known."""
    listing, why_not = devices_list(proc_cgroup, cgroup_root)
    if listing is None:
        return DeviceCheck(f"the cgroup's devices are not readable: {why_not}")
    try:
        rules = listing.read_text()
    except OSError as exc:
        return DeviceCheck(f"the cgroup's devices are not readable: {listing}: {exc.strerror or exc}")
    checked = []
    for index in granted:
        path = devices.get(index)
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        if path is None or st is None or not (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
            continue
        kind = "c" if stat.S_ISCHR(st.st_mode) else "b"
        major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
        if not allows(rules, kind, major, minor):
            return DeviceCheck(
                f"the cgroup's {listing} does not allow GPU {index}'s {path}",
                f"{granter} granted GPU {index}, but this job's cgroup ({listing}) does not allow its device "
                f"{path} ({kind} {major}:{minor}): the grant is not this job's. Fix: submit without exporting "
                "another job's SLURM_*_GPUS (sbatch --export=NONE), or check gres.conf's File= for that GPU",
            )
        checked.append(f"GPU {index}'s {path}")
    if not checked:
        return DeviceCheck(f"the cgroup's {listing} was not checked: no granted GPU's device file is known here")
    return DeviceCheck(f"the cgroup's {listing} allows {', '.join(checked)}")
