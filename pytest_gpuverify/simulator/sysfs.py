"""The simulated host's amdgpu sysfs: the state written as the driver's files, in the real layout
(:mod:`pytest_gpuverify.gpu.amdgpu_sysfs` reads them), under ``<state folder>/sysfs``.

``GPUVERIFY_SYSFS_ROOT=<state folder>/sysfs`` makes the ROCm backend read it, as ``ROCM_PATH=<bin
dir>`` makes it load the simulated library. Each save writes a whole new tree beside the last one and
then swaps the ``sysfs`` link to it (``os.replace``): a reader that resolves the link once reads one
whole tree, never half of a save. The tree follows the saved state only: the processes of
``gpuverify-sim-use`` and the end of ``use_until`` show in the tools' and the library's readings,
which look at the clock and at ``/proc`` on every call.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from pytest_gpuverify.simulator.tools.gpuverify_sim_common import guid

LINK = "sysfs"
ENV_ROOT = "GPUVERIFY_SYSFS_ROOT"  # the ROCm backend reads the driver's files under this root
KFD = "sys/class/kfd/kfd"
STALE_S = 5.0  # a tree older than this, and not the last two, is no one's
FIRST_RENDER_MINOR = 128  # /dev/dri/renderD128 is the first GPU's


def sysfs_root(state_path: Path) -> Path:
    """The root the simulated host's driver files are under (the value for :data:`ENV_ROOT`)."""
    return Path(state_path).resolve().parent / LINK


def tree_files(state) -> dict[str, str]:
    """Relative path -> content of every file of ``state`` (a :class:`.state.SimState`)."""
    files: dict[str, str] = {}
    gpu_nodes = {gpu.node_id for gpu in state.gpus}
    cpu_nodes: list[int] = []
    n = 0
    while len(cpu_nodes) < state.cpus:  # CPU nodes first, as the kernel numbers them, around any GPU node set
        if n not in gpu_nodes:
            cpu_nodes.append(n)
        n += 1
    for node in cpu_nodes:
        files[f"{KFD}/topology/nodes/{node}/gpu_id"] = "0\n"
        files[f"{KFD}/topology/nodes/{node}/properties"] = "cpu_cores_count 8\nsimd_count 0\ndrm_render_minor 0\n"
    now = time.time()
    ids = []
    for i, gpu in enumerate(state.gpus):
        gpu_id = int(guid(gpu.model_dump()))
        ids.append(gpu_id)
        minor = FIRST_RENDER_MINOR + i  # the driver probes in bus order: the SMI order
        node_dir = f"{KFD}/topology/nodes/{gpu.node_id}"
        files[f"{node_dir}/gpu_id"] = f"{gpu_id}\n"
        files[f"{node_dir}/properties"] = f"cpu_cores_count 0\nsimd_count 1216\ndrm_render_minor {minor}\n"
        device = f"sys/class/drm/renderD{minor}/device"
        use = gpu.use_pct
        if gpu.use_until is not None and now >= gpu.use_until:
            use = 0
        if use is not None:  # N/A: the file is absent, as on parts without it
            files[f"{device}/gpu_busy_percent"] = f"{use}\n"
        files[f"{device}/mem_info_vram_used"] = f"{gpu.vram_used}\n"
        files[f"{device}/mem_info_vram_total"] = f"{gpu.vram_total}\n"
    # pid -> (name, {gpu_id: VRAM}); the kernel keeps one vram_<gpu_id> per GPU for every process
    procs: dict[int, tuple[str, dict[int, int]]] = {}
    for gpu_id, gpu in zip(ids, state.gpus, strict=True):
        for p in gpu.processes:
            name, on = procs.setdefault(p.pid, (p.name, {}))
            on[gpu_id] = on.get(gpu_id, 0) + p.vram_bytes
    for p in state.kfd_only_processes:
        procs.setdefault(p.pid, (p.name, {}))
    for pid, (name, on) in procs.items():
        for gpu_id in ids:
            files[f"{KFD}/proc/{pid}/vram_{gpu_id}"] = f"{on.get(gpu_id, 0)}\n"
        for qid, gpu_id in enumerate(sorted(on)):
            files[f"{KFD}/proc/{pid}/queues/{qid}/gpuid"] = f"{gpu_id}\n"
        files[f"proc/{pid}/comm"] = f"{name}\n"
    return files


def write_tree(state, state_path: Path) -> Path:
    """Write ``state``'s tree and point ``<state folder>/sysfs`` at it; return that link."""
    folder = Path(state_path).resolve().parent
    link = folder / LINK
    tree = Path(tempfile.mkdtemp(dir=folder, prefix=".sysfs."))
    (tree / KFD / "proc").mkdir(parents=True)  # there with no process too, as the driver makes it at load
    for rel, text in tree_files(state).items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="ascii")
    for d, _, names in os.walk(tree):  # a container user that is not us reads it too
        os.chmod(d, 0o755)
        for name in names:
            os.chmod(os.path.join(d, name), 0o644)
    previous = os.readlink(link) if link.is_symlink() else None
    if link.exists() and not link.is_symlink():
        shutil.rmtree(link)  # not ours: a tree from before the link
    tmp_link = folder / f".{LINK}.{os.getpid()}.{tree.name}"
    os.symlink(tree.name, tmp_link)
    os.replace(tmp_link, link)
    # keep the tree just replaced (a reader may be in it this moment), remove those before it; not one
    # of the last seconds: another process's save may be writing it
    for old in folder.glob(".sysfs.*"):
        try:
            fresh = time.time() - old.lstat().st_mtime < STALE_S
        except OSError:
            continue
        if old.name not in (tree.name, previous) and not fresh and old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
    return link
