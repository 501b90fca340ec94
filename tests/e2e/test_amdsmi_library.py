"""The ROCm backend's in-process reading through the amdsmi library (gpu/amdsmi_lib.py), against
the simulator's amdsmi module (ROCM_PATH=<sim dir>, where ROCm keeps the real one): the same
readings as the tools give, and the tools again the moment the library fails."""

from __future__ import annotations

import os
import sys

import pytest

from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.amdsmi_lib import AmdSmiLibrary
from pytest_gpuverify.gpu.base import GpuToolError
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.simulator import GIB, SimProcess, SimState, install, save_state


@pytest.fixture
def host(tmp_path):
    """install(state) -> (state path, LocalHost with the fake tools on PATH and ROCM_PATH at them)."""

    def _install(state: SimState, rocm_path: bool = True):
        bin_dir = tmp_path / "bin"
        state_path = install(bin_dir, state)
        env = {
            k: v for k, v in os.environ.items() if k not in ("ROCR_VISIBLE_DEVICES", "GPUVERIFY_SIM_STATE", "ROCM_PATH")
        }
        env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        if rocm_path:
            env["ROCM_PATH"] = str(bin_dir)
        return state_path, LocalHost(env=env)

    yield _install
    sys.modules.pop("amdsmi", None)  # each test loads its own simulated library


def states() -> list[SimState]:
    busy = SimState.idle(4)
    busy.set_busy(1).set_busy(3, use_pct=40, vram_bytes=2 * GIB, pid=777)
    busy.gpus[2].processes = [SimProcess(pid=99, name="other", vram_bytes=GIB), SimProcess(pid=100, vram_bytes=0)]
    busy.kfd_only_processes = [SimProcess(pid=5, name="parent")]
    reordered = SimState.idle(4, rocm_version="6.1.2")  # no hip_id before 6.4: KFD node ids give the order
    reordered.set_busy(0)
    for gpu, node in zip(reordered.gpus, (9, 7, 8, 6)):
        gpu.node_id = node
    newer = reordered.model_copy(deep=True)
    newer.rocm_version = "7.0.2"
    return [SimState.idle(8), busy, reordered, newer]


@pytest.mark.parametrize("state", states(), ids=["idle", "busy", "reordered-6.1", "reordered-7.0"])
def test_the_library_reads_what_the_tools_read(host, state):
    _, local = host(state)
    by_library = RocmBackend(local)
    readings = by_library.read()
    assert by_library.use_library and by_library._library is not None, by_library.library_why
    assert readings == RocmBackend(local, use_library=False).read()
    assert by_library.notes == []


@pytest.mark.parametrize("state", states(), ids=["idle", "busy", "reordered-6.1", "reordered-7.0"])
def test_the_library_lists_the_gpus_the_tools_list(host, state):
    """Names, arches, UUIDs and HIP order from the library, as amd-smi static and list give them; of
    the tools only rocminfo (the arch) runs."""
    _, local = host(state)
    ran: list[str] = []
    run = local.run
    local.run = lambda argv, *a, **k: ran.append(" ".join(argv)) or run(argv, *a, **k)  # type: ignore[method-assign]
    by_library = RocmBackend(local)
    by_library.read()
    inventory = by_library.inventory()
    local.run = run  # type: ignore[method-assign]
    assert inventory == RocmBackend(local, use_library=False).inventory()
    assert [g.index for g in inventory] == list(range(len(state.gpus))) and all(g.name and g.arch for g in inventory)
    assert ran == ["rocminfo"], ran
    assert by_library.notes == []


def test_a_failing_library_hands_over_to_the_tools(host):
    state = SimState.idle(2)
    state_path, local = host(state)
    backend = RocmBackend(local)
    assert backend.read()[0].use_pct == 0 and backend.use_library
    state.set_busy(0)
    state.faults = {"amd-smi": "fail"}  # the library and the amd-smi tool fail; rocm-smi still reads
    save_state(state, state_path)
    readings = backend.read()
    assert readings[0].use_pct == 95 and [p.pid for p in readings[0].processes] == [4242]
    assert not backend.use_library and "AMDSMI_STATUS_DRM_ERROR" in backend.library_why
    assert any(n.startswith("amdsmi library unusable") for n in backend.notes)


def test_without_the_library_the_tools_read(host):
    _, local = host(SimState.idle(2), rocm_path=False)
    backend = RocmBackend(local)
    assert [r.index for r in backend.read()] == [0, 1]
    assert not backend.use_library and "no amdsmi module" in backend.library_why


def test_a_mismatched_amdsmi_says_why_and_prints_nothing(tmp_path, capsys):
    module = tmp_path / "share" / "amd_smi" / "amdsmi"
    module.mkdir(parents=True)
    (module / "__init__.py").write_text(  # what the PyPI wrapper does without libamd_smi.so
        'print("/opt/rocm/lib/libamd_smi.so: cannot open shared object file: No such file or directory")\n'
        "raise KeyError('libamd_smi.so')\n"
    )
    try:
        library, why = AmdSmiLibrary.load({"ROCM_PATH": str(tmp_path)})
    finally:
        sys.modules.pop("amdsmi", None)
    assert library is None and "KeyError" in why and "libamd_smi.so" in why
    assert capsys.readouterr().out == ""


def test_a_remote_host_never_uses_the_library():
    class Remote:
        name = "mi300x-07"

    assert RocmBackend(Remote()).use_library is False
    with pytest.raises(ValueError):
        RocmBackend(Remote(), use_library=True)


def test_a_hung_library_call_hands_over_to_the_tools(host):
    _, local = host(SimState.idle(2))
    backend = RocmBackend(local, tool_timeout=1.0)
    assert backend.read() and backend.use_library
    release = __import__("threading").Event()
    backend._library.lib.amdsmi_get_gpu_activity = lambda handle: release.wait()  # a driver that never answers
    try:
        readings = backend.read()
    finally:
        release.set()
    assert [r.index for r in readings] == [0, 1] and not backend.use_library
    assert "no answer within 1 s" in backend.library_why


def test_clocks_come_from_the_library_and_not_from_the_tools(host):
    state = SimState.idle(4)
    hot = 1 << 0 | 1 << 36  # the driver's ASIC-independent throttler bits: PPT0 and the hotspot's temperature
    state.gpus[2].sm_mhz, state.gpus[2].temp_c, state.gpus[2].power_w, state.gpus[2].throttle_status = (
        1500,
        92,
        740,
        hot,
    )
    _, local = host(state)
    [two] = RocmBackend(local).clocks([2])
    assert (two.index, two.sm_mhz, two.mem_mhz, two.temp_c, two.power_w) == (2, 1500, 1300, 92, 740)
    assert two.throttle == ("ppt0", "temp_hotspot")
    with pytest.raises(GpuToolError, match="amdsmi library only"):
        RocmBackend(local, use_library=False).clocks([2])


def test_a_process_started_by_gpuverify_sim_use_is_listed_on_its_gpus(host):
    import subprocess
    import time

    state_path, local = host(SimState.idle(4))
    env = dict(local.environ, HIP_VISIBLE_DEVICES="1")
    worker = subprocess.Popen([str(state_path.parent / "gpuverify-sim-use"), "2048", "sleep", "30"], env=env)
    try:
        time.sleep(0.5)
        readings = {r.index: r for r in RocmBackend(local, use_library=False).read()}
        assert [(p.pid, p.vram_bytes) for p in readings[1].processes] == [(worker.pid, 2048 << 20)]
        assert all(not readings[i].processes for i in (0, 2, 3))
        assert readings == {r.index: r for r in RocmBackend(local).read()}  # the library lists it too
    finally:
        worker.kill()
        worker.wait()


class _WatchedPath(list):
    """sys.path that records every change made to it."""

    changes: list = []

    def insert(self, *args):
        self.changes.append(("insert", args))
        super().insert(*args)

    def remove(self, *args):
        self.changes.append(("remove", args))
        super().remove(*args)

    def append(self, *args):
        self.changes.append(("append", args))
        super().append(*args)


def test_the_library_loads_from_rocms_folder_without_touching_sys_path(host, monkeypatch):
    """Other threads import while the library loads: an entry put into sys.path and taken out under
    their walk of it makes them skip one (an import of requests failed so)."""
    from pytest_gpuverify.gpu.amdsmi_lib import _import_amdsmi

    _, runner = host(SimState.idle(2))
    watched = _WatchedPath(sys.path)
    monkeypatch.setattr(sys, "path", watched)
    module, why = _import_amdsmi(runner.environ)
    assert why is None and module is not None and module.__file__.startswith(runner.environ["ROCM_PATH"]), why
    assert watched.changes == [] and list(sys.path) == watched
    library, why = AmdSmiLibrary.load(runner.environ)
    assert why is None and len(library.read()) == 2 and len(library.clocks([0, 1])) == 2, why
    assert watched.changes == [], "the simulated library reads its state without touching sys.path either"
