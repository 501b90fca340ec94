"""GPU readings from the amdgpu driver's sysfs: the files ``rocm-smi`` and the amdsmi library read
themselves, without starting a process or loading a library (microseconds a reading).

The layout, as the kernel writes it (``kfd_topology.c``, ``amdgpu_pm.c``, ``kfd_process.c``):

- ``sys/class/kfd/kfd/topology/nodes/<N>/gpu_id``: the KFD GPU id, 0 for a CPU node; the same node's
  ``properties`` holds ``drm_render_minor <m>``. HIP numbers GPUs by KFD node, so a GPU's HIP index
  is the rank of its node among the GPU nodes.
- ``sys/class/drm/renderD<m>/device/``: ``gpu_busy_percent``, ``mem_info_vram_used``,
  ``mem_info_vram_total`` (bytes).
- ``sys/class/kfd/kfd/proc/<pid>/``: one folder per process that opened ``/dev/kfd`` (the host's pid),
  ``vram_<gpu_id>`` its VRAM on each GPU in bytes, ``queues/<qid>/gpuid`` the GPUs it has queues on
  (what ``rocm-smi --showpids``/``--showpidgpus`` read); the name from ``proc/<pid>/comm``.

Everything is read under a root folder ("/" on a real host; the simulated host writes the same layout
in a folder of its own). Any file of the GPUs missing, unreadable or not a number gives None: the
caller reads from the next source. A process that leaves between the listing and its files is skipped,
as the tools skip it.
"""

from __future__ import annotations

import os

from pytest_gpuverify.gpu.base import GpuProcess, GpuReading
from pytest_gpuverify.gpu.rocm_formats import drop_kfd_only

KFD = "sys/class/kfd/kfd"
DRM = "sys/class/drm"


class _Unusable(Exception):
    """A file of the reading is missing or holds no number: the reading is None."""


def _text(path: str) -> str:
    # os.read, not open(): a text file object costs several times the read of a sysfs file
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 4096).decode("ascii", errors="replace" if path.endswith("comm") else "strict")
        finally:
            os.close(fd)
    except (OSError, ValueError) as exc:
        raise _Unusable(path) from exc


def _int(path: str) -> int:
    text = _text(path).strip()
    if not text.isdigit():  # the kernel prints unsigned decimals; anything else is not its file
        raise _Unusable(path)
    return int(text)


def gpu_nodes(root: str = "/") -> list[tuple[int, int, int]]:
    """(HIP index, KFD gpu_id, DRM render minor) per GPU node, in HIP order. Raises _Unusable."""
    nodes_dir = os.path.join(root, KFD, "topology", "nodes")
    try:
        names = [n for n in os.listdir(nodes_dir) if n.isdigit()]
    except OSError as exc:
        raise _Unusable(nodes_dir) from exc
    gpus = []
    for node in sorted(names, key=int):
        gpu_id = _int(os.path.join(nodes_dir, node, "gpu_id"))
        if gpu_id == 0:  # a CPU node
            continue
        minor = None
        for line in _text(os.path.join(nodes_dir, node, "properties")).splitlines():
            key, _, value = line.partition(" ")
            if key == "drm_render_minor":
                minor = value.strip()
        if minor is None or not minor.isdigit():
            raise _Unusable(os.path.join(nodes_dir, node, "properties"))
        gpus.append((gpu_id, int(minor)))
    if not gpus:
        raise _Unusable(nodes_dir)
    return [(hip, gpu_id, minor) for hip, (gpu_id, minor) in enumerate(gpus)]


def _process(proc_dir: str, pid: int, gpu_ids: list[int], root: str) -> dict[int, GpuProcess] | None:
    """gpu_id -> the process on it; None when it left while being read."""
    queued: set[int] = set()
    try:
        queues = os.listdir(os.path.join(proc_dir, "queues"))
    except FileNotFoundError:
        queues = []  # no queue yet (the folder comes with the first one on some kernels)
    except OSError as exc:
        raise _Unusable(proc_dir) from exc
    try:
        for qid in queues:
            queued.add(_int(os.path.join(proc_dir, "queues", qid, "gpuid")))
        vram = {}
        for gpu_id in gpu_ids:
            path = os.path.join(proc_dir, f"vram_{gpu_id}")
            vram[gpu_id] = _int(path) if os.path.exists(path) else None
    except _Unusable:
        if not os.path.isdir(proc_dir):
            return None  # it exited meanwhile
        raise
    try:
        name = _text(os.path.join(root, "proc", str(pid), "comm")).strip()
    except _Unusable:
        name = ""  # another pid namespace (a container) or gone: the tools print no name either
    out = {}
    for gpu_id in gpu_ids:
        # on a GPU: it holds VRAM there, or has a queue there and its VRAM file is absent (unknown);
        # VRAM 0 with or without queues = it only opened /dev/kfd (drop_kfd_only)
        if vram[gpu_id] or (vram[gpu_id] is None and gpu_id in queued):
            out[gpu_id] = GpuProcess(pid=pid, name=name, vram_bytes=vram[gpu_id])
    return out


def read_sysfs(root: str = "/") -> list[GpuReading] | None:
    """One reading of every GPU from the driver's files under ``root``, HIP-indexed; None when they
    are not there or not usable (no amdgpu, another layout, a garbled file)."""
    return read_sysfs_why(root)[0]


def read_sysfs_why(root: str = "/") -> tuple[list[GpuReading] | None, str]:
    """(readings, "") or (None, the first file that could not be used)."""
    try:
        # the simulated host swaps its whole tree at once (a link): one reading reads one tree
        root = os.path.realpath(root)
        nodes = gpu_nodes(root)
        gpu_ids = [gpu_id for _, gpu_id, _ in nodes]
        per_gpu: dict[int, list[GpuProcess]] = {gpu_id: [] for gpu_id in gpu_ids}
        proc_root = os.path.join(root, KFD, "proc")
        try:
            pids = [p for p in os.listdir(proc_root) if p.isdigit()]
        except OSError as exc:
            raise _Unusable(proc_root) from exc
        for pid in sorted(pids, key=int):
            got = _process(os.path.join(proc_root, pid), int(pid), gpu_ids, root)
            for gpu_id, process in (got or {}).items():
                per_gpu[gpu_id].append(process)
        readings = []
        for hip, gpu_id, minor in nodes:
            device = os.path.join(root, DRM, f"renderD{minor}", "device")
            readings.append(
                GpuReading(
                    index=hip,
                    use_pct=float(_int(os.path.join(device, "gpu_busy_percent"))),
                    vram_used_bytes=_int(os.path.join(device, "mem_info_vram_used")),
                    vram_total_bytes=_int(os.path.join(device, "mem_info_vram_total")),
                    processes=tuple(drop_kfd_only(per_gpu[gpu_id])),
                )
            )
        return readings, ""
    except _Unusable as exc:
        return None, f"{exc.args[0]} missing or unusable"
