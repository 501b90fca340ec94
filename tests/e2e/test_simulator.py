"""The simulated ROCm host end to end: install the fake tools, run them as real executables, and read
them with RocmBackend through LocalHost, as the plugin does on a real host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.base import GpuToolError
from pytest_gpuverify.gpu.rocm import RocmBackend, extract_json, parse_rocminfo_arch
from pytest_gpuverify.simulator import GIB, IDLE_VRAM, MODULE, SimProcess, SimState, install, load_state, save_state
from pytest_gpuverify.simulator.tools import MODULES
from pytest_gpuverify.simulator.tools import gpuverify_sim_amd_smi as sim_amd_smi
from pytest_gpuverify.simulator.tools import gpuverify_sim_common as sim_common
from pytest_gpuverify.simulator.tools import gpuverify_sim_rocm_smi as sim_rocm_smi


@pytest.fixture
def sim(tmp_path):
    """install(state) -> (bin_dir, LocalHost whose PATH holds only the fake tools and python3)."""
    pybin = tmp_path / "py"
    pybin.mkdir()
    (pybin / "python3").symlink_to(sys.executable)  # for `#!/usr/bin/env python3` where /usr/bin has none

    def _install(state: SimState, **kw):
        bin_dir = tmp_path / "bin"
        install(bin_dir, state, **kw)
        env = {k: v for k, v in os.environ.items() if k not in ("ROCR_VISIBLE_DEVICES", "GPUVERIFY_SIM_STATE")}
        env["PATH"] = f"{bin_dir}:{pybin}"
        return bin_dir, LocalHost(env=env)

    return _install


def run_tool(host: LocalHost, *argv: str):
    res = host.run(list(argv), timeout=20)
    return res.returncode, res.text(), res.stderr.decode()


def test_install_layout_and_state_roundtrip(sim, tmp_path):
    state = SimState.idle(2, rocm_version="6.4.1")
    bin_dir, host = sim(state)
    state_path = bin_dir / "sim-state.json"
    assert load_state(state_path) == state
    module = (bin_dir / f"{MODULE}.py").read_text()
    assert f"STATE_PATH = {str(state_path.resolve())!r}" in module
    for name in MODULES:  # all copied flat and compiled; the state path is baked into MODULE alone
        assert list((bin_dir / "__pycache__").glob(f"{name}.*.pyc"))
        assert name == MODULE or "STATE_PATH" not in (bin_dir / f"{name}.py").read_text()
    for tool in ("rocm-smi", "amd-smi", "rocminfo"):
        text = (bin_dir / tool).read_text()
        shebang = "#!/usr/bin/python3 -IS\n" if os.access("/usr/bin/python3", os.X_OK) else "#!/usr/bin/env python3\n"
        assert text.startswith(shebang) and f"sys.path.insert(0, {str(bin_dir.resolve())!r})" in text
        assert f"from {MODULE} import main" in text and len(text.splitlines()) == 6
        assert os.access(bin_dir / tool, os.X_OK)
    assert [g.node_id for g in state.gpus] == [2, 3] and state.gpus[0].uuid.startswith("GPU-")
    with pytest.raises(ValueError):
        SimState(faults={"rocm-smi": "explode"})


def test_idle_8x_gfx942_reads_idle_on_both_paths(sim):
    _, host = sim(SimState.idle(8, "gfx942"))
    backend = RocmBackend(host)
    readings = backend.read()
    assert [r.index for r in readings] == list(range(8))
    assert all(
        r.use_pct == 0 and r.vram_used_bytes == IDLE_VRAM and r.vram_total_bytes == 192 * GIB and r.processes == ()
        for r in readings
    )
    assert backend.notes == []
    inv = backend.inventory()
    assert [(g.index, g.arch, g.name) for g in inv] == [(i, "gfx942", "AMD Instinct MI300X") for i in range(8)]
    assert all(g.uuid and g.uuid.startswith("GPU-") for g in inv)
    assert backend.host_arch() == "gfx942"


def test_busy_gpu_reported_and_same_without_amd_smi(sim):
    state = SimState.idle(8).set_busy(3, use_pct=95, vram_bytes=80 * GIB, pid=4242, name="python3")
    state.kfd_only_processes.append(SimProcess(pid=99, name="kfd_open"))  # opened /dev/kfd only: not a user
    _, host = sim(state)
    with_amd = RocmBackend(host).read()
    busy = with_amd[3]
    assert (busy.use_pct, busy.vram_used_bytes) == (95, IDLE_VRAM + 80 * GIB)
    assert [(p.pid, p.name, p.vram_bytes) for p in busy.processes] == [(4242, "python3", 80 * GIB)]
    assert all(r.processes == () for i, r in enumerate(with_amd) if i != 3)
    state.amd_smi_installed = False
    _, host = sim(state)
    assert host.which("amd-smi") is None
    backend = RocmBackend(host)
    assert backend.read() == with_amd
    assert backend.inventory()[3].arch == "gfx942"


def test_state_changes_are_seen_by_the_next_read(sim):
    state = SimState.idle(2)
    bin_dir, host = sim(state)
    backend = RocmBackend(host)
    assert backend.read()[1].processes == ()
    save_state(state.set_busy(1), bin_dir / "sim-state.json")
    assert backend.read()[1].processes[0].pid == 4242
    save_state(state.set_idle(1), bin_dir / "sim-state.json")
    assert backend.read()[1].processes == ()


def test_rocm7_envelope_and_lowpower_warning(sim):
    state = SimState.idle(2, rocm_version="7.0.2", lowpower_warning=True).set_busy(0)
    _, host = sim(state)
    _, metric, _ = run_tool(host, "amd-smi", "metric", "--usage", "--mem-usage", "--json")
    assert list(json.loads(metric)) == ["gpu_data"]
    _, process, _ = run_tool(host, "amd-smi", "process", "--json")
    assert isinstance(json.loads(process), list)  # process/list stay plain lists in 26.x
    rc, out, err = run_tool(host, "rocm-smi", "--showuse", "--showmemuse", "--showmeminfo", "vram", "--json")
    assert rc == 0 and "low-power state" in err and "GPU Memory Allocated (VRAM%)" in json.loads(out)["card0"]
    readings = RocmBackend(host).read()
    assert readings[0].use_pct == 95 and readings[0].processes[0].pid == 4242
    state.amd_smi_installed = False
    _, host = sim(state)
    assert RocmBackend(host).read() == readings


def test_nonroot_warning_precedes_amd_smi_json(sim):
    _, host = sim(SimState.idle(2, nonroot_warning=True).set_busy(1))
    _, out, _ = run_tool(host, "amd-smi", "metric", "-u", "-m", "--json")
    assert out.startswith("WARNING: User is missing the following required groups: render, video.")
    readings = RocmBackend(host).read()
    assert readings[1].use_pct == 95 and readings[1].processes[0].name == ""  # another user's process: N/A


def test_rocm_smi_text_formats(sim):
    _, host = sim(SimState.idle(2))
    _, out, _ = run_tool(host, "rocm-smi", "--showpids")
    lines = out.split("\n")
    assert lines[:2] == ["", ""] and len(lines[2]) == 90 and "ROCm System Management Interface" in lines[2]
    assert "No KFD PIDs currently running" in out
    rc, out, err = run_tool(host, "rocm-smi", "--showpids", "--json")
    assert (rc, out, err.strip()) == (0, "", "WARNING: No JSON data to report")
    _, out, _ = run_tool(host, "rocm-smi", "--showproductname")
    assert "GPU[1]\t\t: Node ID: \t\t3" in out and "GPU[0]\t\t: GFX Version: \t\tgfx942" in out
    rc, _, err = run_tool(host, "amd-smi", "metric", "--bogus")
    assert rc == 2 and "usage" in err


def test_node_order_differs_from_card_order(sim):
    state = SimState.idle(4)
    for gpu, node in zip(state.gpus, (5, 4, 3, 2)):  # rocm-smi order (BDF) is the reverse of KFD order
        gpu.node_id = node
    state.set_busy(0)  # card 0 = HIP 3
    _, host = sim(state)
    readings = RocmBackend(host).read()
    assert [r.index for r in readings if r.processes] == [3]
    inv = RocmBackend(host).inventory()
    assert inv[3].uuid == state.gpus[0].uuid
    state.amd_smi_installed = False
    _, host = sim(state)
    assert [r.index for r in RocmBackend(host).read() if r.processes] == [3]
    old = state.model_copy(update={"rocm_version": "6.0.0"})  # no Node ID in --showproductname, no list -e
    _, host = sim(old)
    backend = RocmBackend(host)
    assert [r.index for r in backend.read() if r.processes] == [0]  # identity: all that is knowable
    assert any("HIP order" in n for n in backend.notes)


def test_amd_smi_without_enumeration_maps_by_node_id(sim):
    state = SimState.idle(3, rocm_version="6.2.4")
    for gpu, node in zip(state.gpus, (4, 2, 3)):
        gpu.node_id = node
    _, host = sim(state.set_busy(0))
    rc, _, _ = run_tool(host, "amd-smi", "list", "-e", "--json")
    assert rc == 2  # `-e` arrived with amd-smi 25.3 (ROCm 6.4)
    assert [r.index for r in RocmBackend(host).read() if r.processes] == [2]


def test_pre_61_amd_smi_plain_numbers(sim):
    state = SimState.idle(2, rocm_version="6.0.2").set_busy(1, use_pct=40)
    _, host = sim(state)
    _, out, _ = run_tool(host, "amd-smi", "metric", "-u", "-m", "--json")
    assert json.loads(out)[1]["usage"]["gfx_activity"] == 40  # no {"value", "unit"} before 6.1
    readings = RocmBackend(host).read()
    assert (readings[1].use_pct, readings[1].vram_used_bytes) == (40, IDLE_VRAM + 80 * GIB)
    assert readings[1].processes[0].vram_bytes == 80 * GIB


def test_unsupported_use_reads_none_on_both_paths(sim):
    state = SimState.idle(2)
    state.gpus[0].use_pct = None  # amd-smi: "usage": "N/A"; rocm-smi: "GPU use Unsupported"
    _, host = sim(state)
    assert [r.use_pct for r in RocmBackend(host).read()] == [None, 0]
    state.amd_smi_installed = False
    _, host = sim(state)
    assert [r.use_pct for r in RocmBackend(host).read()] == [None, 0]


@pytest.mark.parametrize("kind", ["garbage", "empty", "fail"])
def test_amd_smi_fault_falls_back_to_rocm_smi(sim, kind):
    state = SimState.idle(2, faults={"amd-smi": kind}).set_busy(1)
    _, host = sim(state)
    backend = RocmBackend(host)
    readings = backend.read()
    assert readings[1].processes[0].pid == 4242
    assert any(n.startswith("amd-smi unusable") for n in backend.notes)


@pytest.mark.parametrize("kind", ["garbage", "empty", "fail"])
def test_all_tools_faulty_raises_naming_them(sim, kind):
    _, host = sim(SimState.idle(1, faults={"amd-smi": kind, "rocm-smi": kind}))
    with pytest.raises(GpuToolError) as err:
        RocmBackend(host).read()
    assert "amd-smi" in str(err.value) and "rocm-smi" in str(err.value)
    _, host = sim(SimState.idle(1, amd_smi_installed=False, faults={"rocm-smi": kind}))
    with pytest.raises(GpuToolError, match="rocm-smi"):
        RocmBackend(host).read()


def test_rocm_smi_fail_still_exits_zero(sim):
    _, host = sim(SimState.idle(1, faults={"rocm-smi": "fail"}))
    rc, out, err = run_tool(host, "rocm-smi", "--showuse", "--json")
    assert rc == 0 and out == "" and "ERROR" in err


def test_hang_times_out_quickly(sim):
    _, host = sim(SimState.idle(1, amd_smi_installed=False, faults={"rocm-smi": "hang"}))
    start = time.monotonic()
    with pytest.raises(GpuToolError, match="rocm-smi.*no answer"):
        RocmBackend(host, tool_timeout=0.5).read()
    assert time.monotonic() - start < 5
    _, host = sim(SimState.idle(1, faults={"amd-smi": "hang"}).set_busy(0))
    backend = RocmBackend(host, tool_timeout=0.5)
    assert backend.read()[0].processes[0].pid == 4242  # amd-smi hung: rocm-smi answered
    assert any("no answer" in n for n in backend.notes)


def test_rocminfo_gfx950_and_faults(sim):
    state = SimState.idle(2, arch="gfx950", rocm_version="7.0.2")
    _, host = sim(state)
    _, out, _ = run_tool(host, "rocminfo")
    assert parse_rocminfo_arch(out) == "gfx950" and "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-" in out
    assert out.index("Device Type:             CPU") < out.index("Device Type:             GPU")
    assert "  Name:                    gfx950                             \n" in out
    backend = RocmBackend(host)
    assert backend.host_arch() == "gfx950"
    assert backend.inventory()[0].name == "AMD Instinct MI355X"
    _, host = sim(state.model_copy(update={"faults": {"rocminfo": "fail"}}))
    backend = RocmBackend(host)
    assert backend.host_arch() == "gfx950"  # from amd-smi static when rocminfo fails
    assert any("rocminfo" in n for n in backend.notes)


def test_rocminfo_honours_rocr_visible_devices(sim):
    state = SimState.idle(4)
    _, host = sim(state)
    res = host.run(["rocminfo"], env={"ROCR_VISIBLE_DEVICES": "2"})
    assert res.text().count("Device Type:             GPU") == 1 and state.gpus[2].uuid in res.text()


def test_tools_run_without_this_package(sim, tmp_path):
    # Containers have neither pydantic nor pytest_gpuverify: the tool must run with -I (no site, no cwd).
    bin_dir, _ = sim(SimState.idle(1))
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(bin_dir / "rocm-smi"), "--showuse", "--json"],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=tmp_path,
    )
    assert out.returncode == 0 and extract_json(out.stdout)["card0"]["GPU use (%)"] == "0"


@pytest.mark.parametrize("argv", [["amd-smi", "metric", "-u", "-m", "--json"], ["rocm-smi", "--showuse", "--json"]])
def test_plain_calls_import_no_argparse(sim, argv):
    # The samplers' calls: start-up time is the cost of a reading, and argparse alone would double it.
    bin_dir, _ = sim(SimState.idle(1))
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(bin_dir / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        timeout=20,
    )
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert out.returncode == 0 and "argparse" not in imported
    own = {MODULE, "gpuverify_sim_" + argv[0].replace("-", "_")}
    assert imported & set(MODULES) == own  # its own tool's module, no other


@pytest.mark.parametrize(
    "argv",
    [
        ["metric", "-u", "-m", "--json"],
        ["metric", "--usage", "--mem-usage"],
        ["process", "--json"],
        ["process"],
        ["static", "--asic", "--json"],
        ["static", "-a", "-b"],
        ["list", "-e", "--json"],
        ["list", "--json"],
        ["version"],
    ],
)
@pytest.mark.parametrize("rocm", [(6, 1), (7, 0)])
def test_amd_smi_plain_calls_read_as_argparse_reads_them(argv, rocm):
    fast = sim_amd_smi.amd_smi_plain_call(argv, rocm)
    if "-e" in argv and rocm < (6, 4):  # no -e before amd-smi 25.3: argparse must refuse it
        assert fast is None
        with pytest.raises(SystemExit):
            sim_amd_smi.amd_smi_args(argv, rocm)
        return
    assert fast is not None and vars(fast) == vars(sim_amd_smi.amd_smi_args(argv, rocm))


@pytest.mark.parametrize("argv", [["--showuse", "--json"], ["-u"], ["--showproductname", "--json"], ["--showbus"], []])
def test_rocm_smi_plain_calls_read_as_argparse_reads_them(argv):
    fast = sim_common.plain_call(argv, sim_rocm_smi.ROCM_SMI_FLAGS, sim_rocm_smi.ROCM_SMI_DEFAULTS)
    assert fast is not None and vars(fast) == vars(sim_rocm_smi.rocm_smi_args(argv))


@pytest.mark.parametrize("argv", [["metric", "-g", "0", "--json"], ["metric", "--bogus"], ["nope"], []])
def test_amd_smi_other_calls_go_to_argparse(argv):
    assert sim_amd_smi.amd_smi_plain_call(argv, (7, 0)) is None
    rocm_smi_call = (["--showmeminfo", "vram"], sim_rocm_smi.ROCM_SMI_FLAGS, sim_rocm_smi.ROCM_SMI_DEFAULTS)
    assert sim_common.plain_call(*rocm_smi_call) is None
