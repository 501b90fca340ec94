"""The amdgpu driver's sysfs reader (gpu/amdgpu_sysfs.py) on trees written here in the kernel's
layout, and on the simulated host's tree against its tools' reading of the same state; the ROCm
backend reading sysfs first and falling back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.amdgpu_sysfs import read_sysfs, read_sysfs_why
from pytest_gpuverify.gpu.base import GpuProcess
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.sampler import TOOL_INTERVAL_S, reading_interval
from pytest_gpuverify.simulator import GIB, SimProcess, SimState, install, load_state, save_state
from pytest_gpuverify.simulator.sysfs import sysfs_root

KFD = "sys/class/kfd/kfd"


def put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tree(root: Path) -> Path:
    """A CPU node 0, then GPUs at nodes 2 and 1 (gpu_ids 500 and 400, renderD129 and renderD128):
    HIP 0 is node 1 (gpu_id 400). pid 10 runs on gpu 500 with queues; pid 11 on both; pid 12 only
    opened /dev/kfd; pid 13 has a queue on 400 and no VRAM file (unknown)."""
    put(root, f"{KFD}/topology/nodes/0/gpu_id", "0\n")
    put(root, f"{KFD}/topology/nodes/0/properties", "cpu_cores_count 64\ndrm_render_minor 0\n")
    for node, gpu_id, minor, busy, used in ((2, 500, 129, 97, 50 * GIB), (1, 400, 128, 0, 300 << 20)):
        put(root, f"{KFD}/topology/nodes/{node}/gpu_id", f"{gpu_id}\n")
        put(root, f"{KFD}/topology/nodes/{node}/properties", f"simd_count 1216\ndrm_render_minor {minor}\n")
        device = f"sys/class/drm/renderD{minor}/device"
        put(root, f"{device}/gpu_busy_percent", f"{busy}\n")
        put(root, f"{device}/mem_info_vram_used", f"{used}\n")
        put(root, f"{device}/mem_info_vram_total", f"{192 * GIB}\n")
    for pid, vram, queues in (
        (10, {500: 40 * GIB, 400: 0}, [500]),
        (11, {500: 1 * GIB, 400: 2 * GIB}, [400, 500]),
        (12, {500: 0, 400: 0}, []),
        (13, {500: 0}, [400]),
    ):
        for gpu_id, value in vram.items():
            put(root, f"{KFD}/proc/{pid}/vram_{gpu_id}", f"{value}\n")
        for qid, gpu_id in enumerate(queues):
            put(root, f"{KFD}/proc/{pid}/queues/{qid}/gpuid", f"{gpu_id}\n")
        put(root, f"proc/{pid}/comm", f"job{pid}\n")
    return root


def test_a_tree_reads_in_hip_order_with_processes_per_gpu(tmp_path):
    first, second = read_sysfs(str(tree(tmp_path)))
    assert (first.index, first.use_pct, first.vram_used_bytes) == (0, 0.0, 300 << 20)  # node 1 first
    assert (second.index, second.use_pct, second.vram_used_bytes, second.vram_total_bytes) == (
        1,
        97.0,
        50 * GIB,
        192 * GIB,
    )
    # the kfd-only pid 12 is on neither; pid 13's VRAM is unknown where it has a queue
    assert first.processes == (
        GpuProcess(pid=11, name="job11", vram_bytes=2 * GIB),
        GpuProcess(pid=13, name="job13", vram_bytes=None),
    )
    assert second.processes == (
        GpuProcess(pid=10, name="job10", vram_bytes=40 * GIB),
        GpuProcess(pid=11, name="job11", vram_bytes=1 * GIB),
    )


def test_a_process_without_a_name_is_read_without_one(tmp_path):
    root = tree(tmp_path)
    os.unlink(root / "proc/10/comm")  # another pid namespace: the tools print no name either
    assert read_sysfs(str(root))[1].processes[0] == GpuProcess(pid=10, name="", vram_bytes=40 * GIB)


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("sys/class/drm/renderD129/device/gpu_busy_percent", None),
        ("sys/class/drm/renderD128/device/mem_info_vram_used", "lots\n"),
        (f"{KFD}/topology/nodes/2/properties", "simd_count 1216\n"),
        (f"{KFD}/topology/nodes/1/gpu_id", "\x00\x01\n"),
        (f"{KFD}/proc/11/vram_400", "-5\n"),
        (f"{KFD}/proc/10/queues/0/gpuid", ""),
    ],
)
def test_a_missing_or_garbled_file_gives_no_reading(tmp_path, rel, text):
    root = tree(tmp_path)
    if text is None:
        os.unlink(root / rel)
    else:
        (root / rel).write_text(text)
    readings, why = read_sysfs_why(str(root))
    assert readings is None and rel in why


def test_no_driver_no_gpu_node_no_reading(tmp_path):
    assert read_sysfs(str(tmp_path)) is None  # no amdgpu at all
    put(tmp_path, f"{KFD}/topology/nodes/0/gpu_id", "0\n")
    put(tmp_path, f"{KFD}/topology/nodes/0/properties", "drm_render_minor 0\n")
    assert read_sysfs(str(tmp_path)) is None  # CPU nodes only


def pid_order(readings):
    """The readings with each GPU's processes by pid: the order of a listing says nothing."""
    return [r.model_copy(update={"processes": tuple(sorted(r.processes, key=lambda p: p.pid))}) for r in readings]


def sim_host(tmp_path: Path, state: SimState) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "sim"
    path = install(bin_dir, state)
    return path, {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUVERIFY_SYSFS_ROOT": str(sysfs_root(path))}


def test_the_simulated_hosts_tree_reads_as_its_tools_do(tmp_path):
    state = SimState.idle(gpus=4)
    state.gpus[0].node_id = 9  # SMI 0 is HIP 3
    state.set_busy(0, pid=700, vram_bytes=10 * GIB)
    state.set_busy(2, pid=701, name="pt_main_thread")
    state.gpus[2].processes.append(SimProcess(pid=700, vram_bytes=1 * GIB))  # 700 on two GPUs
    state.kfd_only_processes = [SimProcess(pid=702)]
    path, env = sim_host(tmp_path, state)
    by_sysfs = RocmBackend(LocalHost(env=env), use_library=False)
    by_tools = RocmBackend(LocalHost(env={"PATH": env["PATH"]}), use_library=False)
    assert by_sysfs.reading_source() == f"amdgpu sysfs under {env['GPUVERIFY_SYSFS_ROOT']}"
    assert by_tools.reading_source() == "amd-smi"
    got = by_sysfs.read()
    assert got == pid_order(by_tools.read())
    assert [len(r.processes) for r in got] == [0, 2, 0, 1] and got[3].processes[0].pid == 700
    # a save rewrites the tree: the reading follows the state, idle again
    state = load_state(path)
    for i in range(4):
        state.set_idle(i)
    state.gpus[1].use_pct = None  # N/A: no gpu_busy_percent, the next source reads
    save_state(state, path)
    assert by_sysfs.read() == pid_order(by_tools.read()) and all(not r.processes for r in by_sysfs.read())
    assert len([p for p in path.parent.glob(".sysfs.*") if p.is_dir()]) <= 3  # older trees removed


def test_the_backend_falls_back_to_the_tools_once_sysfs_fails(tmp_path):
    path, env = sim_host(tmp_path, SimState.idle(gpus=2).set_busy(1))
    backend = RocmBackend(LocalHost(env=env), use_library=False)
    assert reading_interval(backend, 0.2) == 0.2  # read in-process: the window's own cadence
    assert backend.read()[1].use_pct == 95.0
    state = load_state(path)
    state.gpus[0].use_pct = None  # the driver's file goes away
    save_state(state, path)
    assert [r.use_pct for r in backend.read()] == [None, 95.0]  # amd-smi's N/A
    assert backend.reading_source() == "amd-smi"
    assert backend.sysfs_why is not None and "gpu_busy_percent" in backend.sysfs_why
    assert any(n.startswith("amdgpu sysfs gave no reading") for n in backend.notes)
    assert reading_interval(backend, 0.2) == TOOL_INTERVAL_S  # the tools: at most every 2 s


def test_sysfs_is_never_read_for_another_host(tmp_path):
    _, env = sim_host(tmp_path, SimState.idle(gpus=1))

    class Remote(LocalHost):
        name = "gpu-7"

    backend = RocmBackend(Remote(env=env), use_library=False, sysfs_root=env["GPUVERIFY_SYSFS_ROOT"])
    assert backend.sysfs_root is None and backend.reading_source() == "amd-smi"


def test_the_root_parameter_beats_the_variable(tmp_path):
    _, env = sim_host(tmp_path, SimState.idle(gpus=2))
    backend = RocmBackend(
        LocalHost(env=dict(env, GPUVERIFY_SYSFS_ROOT=str(tmp_path / "nothing"))), sysfs_root=env["GPUVERIFY_SYSFS_ROOT"]
    )
    assert backend.reading_source().startswith("amdgpu sysfs under ") and len(backend.read()) == 2
