"""The machine's identity: the parsers of each format against real captures (tests/data/samples/gpu_tools)
and the simulated host's own tools and library, the record made of them (place/machine.py), its digest,
and what compare holds equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_nvml import FakeNvml, FakeNvmlError, gpu_dev
from json_captures import close_json  # some captures are cut mid-JSON

from pytest_gpuverify.compare.command import Refused, decide
from pytest_gpuverify.compare.identity import differences, machine_facts
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.identity import host_facts, rocm_runtime
from pytest_gpuverify.gpu.identity_formats import (
    ROCM_SMI_STATIC,
    ROCM_SMI_VOLATILE,
    amd_smi_text_entries,
    cuda_version,
    parse_amd_smi_identity,
    parse_amd_smi_version,
    parse_nvidia_identity_csv,
    parse_nvidia_proc_version,
    parse_nvidia_smi_cuda,
    parse_rocm_smi_identity,
    partition,
)
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.place.facts_cache import FactsCache
from pytest_gpuverify.place.machine import assemble, read_machine
from pytest_gpuverify.records.artifact import Artifact, GpuRecord, PerfRow, RunRecord, TargetRecord
from pytest_gpuverify.records.machine import MachineGpu, MachineRecord, held, machine_digest, machine_line
from pytest_gpuverify.records.raw_log import MACHINE, read_trailer, seal_log
from pytest_gpuverify.simulator import SimState, install

SAMPLES = Path(__file__).parents[2] / "data" / "samples" / "gpu_tools"


def sample(name: str) -> str:
    """A capture without its ``# SOURCE`` header line."""
    return (SAMPLES / name).read_text(encoding="utf-8").split("\n", 1)[1]


# -- the formats -----------------------------------------------------------------------------------


def test_rocm_smi_text_of_a_4x_mi300x_gives_driver_vbios_serial_cap_and_partitions():
    cards, driver = parse_rocm_smi_identity(sample("rocm-smi_a_4xMI300X_rocm6.0-6.1.0.txt"))
    assert driver == "6.7.0" and sorted(cards) == [0, 1, 2, 3]
    assert cards[0] == {
        "name": "AMD Instinct MI300X OAM",
        "arch": None,
        "node_id": None,
        "vbios": "113-MI3SRIOV-001",
        "serial": "692347006052",
        "bdf": "0000:26:00.0",
        "compute_partition": "SPX",
        "memory_partition": "NPS1",
        "power_cap_w": 750.0,
    }
    assert cards[3]["serial"] == "692347005902"


def test_rocm_smi_json_keeps_na_as_unknown():

    cards, driver = parse_rocm_smi_identity(close_json(sample("rocm-smi_json_allinfo_780M_APU_rocm6.2.4_partial.txt")))
    assert driver is None and cards[0]["vbios"] == "113-PHXGENERIC-001" and cards[0]["bdf"] == "0000:C4:00.0"
    assert cards[0]["serial"] is None and cards[0]["compute_partition"] is None  # "N/A", not printed


def test_amd_smi_static_text_of_an_mi350x():
    gpus, driver = parse_amd_smi_identity(sample("amd-smi_static_MI350X_gfx950_text.txt"))
    assert driver == "6.18.3"
    assert gpus[0]["name"] == "AMD Instinct MI350X" and gpus[0]["arch"] == "gfx950" and gpus[0]["vbios"] == "00154951"
    assert gpus[0]["bdf"] == "0000:05:00.0" and gpus[0]["power_cap_w"] is None  # no --limit in that capture
    assert amd_smi_text_entries("garbage\nGPU: x\n") == []


def test_amd_smi_static_json_both_envelopes_and_the_cap_set_now():
    entry = {
        "gpu": 2,
        "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942", "asic_serial": "0xABC"},
        "board": {"product_serial": "N/A"},
        "ifwi": {"version": "113-M3000100-102"},
        "driver": {"name": "amdgpu", "version": "6.12.12"},
        "partition": {"compute_partition": "CPX", "memory_partition": "NPS4", "partition_id": 0},
        "limit": {"max_power": {"value": 750, "unit": "W"}, "socket_power": {"value": 600, "unit": "W"}},
    }
    for text in (json.dumps([entry]), json.dumps({"gpu_data": [entry]})):
        gpus, driver = parse_amd_smi_identity(text)
        assert driver == "6.12.12"
        assert gpus[2]["serial"] == "0xABC"  # no board serial: the chip's
        assert (gpus[2]["compute_partition"], gpus[2]["memory_partition"], gpus[2]["power_cap_w"]) == (
            "CPX",
            "NPS4",
            600.0,
        )
    assert parse_amd_smi_identity("[]") == ({}, None) and parse_amd_smi_identity("") == ({}, None)


def test_amd_smi_version_line():
    line = sample("rocm-smi_i_MI300X_partitioned_partial_rocm6.4.1.txt").splitlines()[1]
    facts = parse_amd_smi_version(line)
    assert facts["rocm version"] == "6.4.1" and facts["amdgpu version"] == "6.10.5" and "amd_hsmp version" not in facts


@pytest.mark.parametrize(
    "value, expected",
    [("SPX", "SPX"), ("nps4", "NPS4"), ("N/A", None), ("SPX?", None), (None, None), ("Not supported", None)],
)
def test_partition_values(value, expected):
    assert partition(value) == expected


def test_nvidia_formats():
    proc = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
        "(dvs-builder@U22-I3-AM02-24-3)  Thu Oct 30 2026\nGCC version:  gcc version 12.3.0\n"
    )
    assert parse_nvidia_proc_version(proc) == "580.159.04" and parse_nvidia_proc_version("nothing") is None
    assert parse_nvidia_smi_cuda(sample("nvidia-smi_idle_queries_H200.txt")) == "13.0"
    assert cuda_version(12080) == "12.8" and cuda_version(13000) == "13.0" and cuda_version(0) is None
    csv = (
        "0, 1654824012345, 96.00.A5.00.01, 00000000:00:06.0, 580.159.04, 700.00, Disabled, Enabled, 0, 0, 1980, 3201\n"
        "Unable to determine the device handle for GPU0000:07:00.0: GPU has fallen off the bus.\n"
        "1, [N/A], 96.00.A5.00.01, 00000000:00:07.0, 580.159.04, 550.00, [N/A], Disabled, [N/A], [N/A], 1980, 3201\n"
    )
    rows, driver = parse_nvidia_identity_csv(csv)
    assert driver == "580.159.04" and sorted(rows) == [0, 1]
    assert rows[0] == {
        "serial": "1654824012345",
        "vbios": "96.00.A5.00.01",
        "bdf": "00000000:00:06.0",
        "power_cap_w": 700.0,
        "mig_mode": "disabled",
        "ecc_mode": "enabled",
        "ecc_corrected": 0,
        "ecc_uncorrected": 0,
        "sm_mhz_max": 1980.0,
        "mem_mhz_max": 3201.0,
    }
    assert rows[1]["serial"] is None and rows[1]["mig_mode"] is None and rows[1]["power_cap_w"] == 550.0


# -- the simulated host prints the real formats, with its state's values ----------------------------


@pytest.fixture
def sim(tmp_path):
    state = SimState.idle(gpus=2, amdgpu_version="6.10.5")
    state.gpus[1].compute_partition, state.gpus[1].memory_partition, state.gpus[1].power_cap_w = "CPX", "NPS4", 600.0
    state.gpus[1].vbios = "113-M3000100-103"
    bin_dir = tmp_path / "bin"
    install(bin_dir, state)
    return bin_dir, state


def tool(bin_dir: Path, *argv: str) -> str:
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, check=True).stdout


def test_the_simulated_tools_print_each_gpus_identity(sim):
    bin_dir, state = sim
    for argv in (ROCM_SMI_STATIC + ROCM_SMI_VOLATILE[1:-1], tuple(a for a in ROCM_SMI_VOLATILE if a != "--json")):
        cards, driver = parse_rocm_smi_identity(tool(bin_dir, *argv))
        assert driver == "6.10.5"
        assert (cards[1]["compute_partition"], cards[1]["memory_partition"], cards[1]["power_cap_w"]) == (
            "CPX",
            "NPS4",
            600.0,
        )
        assert cards[0]["compute_partition"] == "SPX" and cards[0]["node_id"] == 2
    text = tool(bin_dir, "rocm-smi", "--showvbios", "--showserial")
    assert "GPU[1]\t\t: VBIOS version: 113-M3000100-103" in text and f"Serial Number: {state.gpus[0].serial}" in text
    for argv in (("amd-smi", "static", "--json"), ("amd-smi", "static")):
        gpus, driver = parse_amd_smi_identity(tool(bin_dir, *argv))
        assert driver == "6.10.5" and gpus[1]["vbios"] == "113-M3000100-103" and gpus[1]["power_cap_w"] == 600.0
        assert gpus[1]["compute_partition"] == "CPX" and gpus[0]["serial"] == state.gpus[0].serial
    assert parse_amd_smi_version(tool(bin_dir, "amd-smi", "version"))["amdgpu version"] == "6.10.5"
    assert rocm_runtime({"ROCM_PATH": str(bin_dir)}) == "ROCm 6.4.1"


@pytest.mark.parametrize("library", [True, False])
def test_the_record_of_the_simulated_host_through_library_and_tools(sim, tmp_path, library):
    bin_dir, state = sim
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", ROCM_PATH=str(bin_dir))
    backend = RocmBackend(LocalHost(env), use_library=None if library else False)
    cache = FactsCache(tmp_path)
    first = read_machine(backend, backend.inventory(), cache)
    assert first.read_with.startswith("amdsmi library" if library else "rocm-smi") and first.kept_from is None
    assert first.driver == "amdgpu 6.10.5" and first.runtime == "ROCm 6.4.1" and first.gpus_visible == 2
    assert [(g.compute_partition, g.memory_partition, g.power_cap_w, g.vbios) for g in first.gpus] == [
        ("SPX", "NPS1", 750.0, "113-M3000100-102"),
        ("CPX", "NPS4", 600.0, "113-M3000100-103"),
    ]
    assert [g.serial for g in first.gpus] == [g.serial for g in state.gpus]
    state.gpus[0].compute_partition = "DPX"  # changed without a reboot: read again; the VBIOS is kept
    state.gpus[0].vbios = "113-NEVER-READ"
    from pytest_gpuverify.simulator import save_state

    save_state(state, bin_dir / "sim-state.json")
    second = read_machine(backend, backend.inventory(), cache)
    assert second.kept_from and second.gpus[0].compute_partition == "DPX" and second.gpus[0].vbios == "113-M3000100-102"
    if library:
        assert first.gpus[0].ecc_mode == "enabled" and first.gpus[0].sm_mhz_max == 2100.0
    else:
        assert "ecc_mode of gpu 0, 1: read through the amdsmi library only" in first.unknowns


# -- the record ------------------------------------------------------------------------------------


def test_unknowns_name_each_fact_and_why_grouped_by_reason():
    fixed = {
        "read_with": "NVML",
        "gpus": [
            {"index": 0, "name": "NVIDIA H200", "arch": "sm_90", "uuid": "GPU-1"},
            {"index": 1, "name": "NVIDIA H200", "arch": "sm_90", "uuid": "GPU-2"},
        ],
        "why": {"serial": {"0": "nvmlDeviceGetSerial: Not Supported", "1": "nvmlDeviceGetSerial: Not Supported"}},
        "failed": [],
        "runtime": None,
        "why_runtime": "NVML and nvidia-smi gave no CUDA version",
    }
    changing = {
        "read_with": "NVML",
        "driver": "nvidia 580.159.04",
        "gpus": [{"index": 0, "power_cap_w": 700.0, "mig_mode": "disabled"}, {"index": 1, "power_cap_w": 700.0}],
        "why": {"mig_mode": {"1": "nvmlDeviceGetMigMode: Not Supported"}},
        "failed": [],
    }
    record = assemble("nvidia", {"hostname": "h", "boot_id": "b"}, fixed, changing, ["dmi_serial: root only"])
    assert "serial of gpu 0, 1: nvmlDeviceGetSerial: Not Supported" in record.unknowns
    assert "mig_mode of gpu 1: nvmlDeviceGetMigMode: Not Supported" in record.unknowns
    assert (
        "runtime: NVML and nvidia-smi gave no CUDA version" in record.unknowns
        and "dmi_serial: root only" in record.unknowns
    )
    assert not any(u.startswith("compute_partition") for u in record.unknowns)  # not an NVIDIA fact
    assert record.read_with == "NVML; sysfs, /proc" and record.gpus_visible == 2
    assert machine_line(record) == (
        "NVIDIA H200 sm_90, 2 visible, nvidia 580.159.04, runtime unknown, MIG disabled, 700 W, "
        "kernel ?, host h (machine-id ?, boot b)"
    )


def test_host_facts_read_this_host():
    facts, unknowns = host_facts(dmi="/nonexistent/dmi")
    assert facts["kernel"] == os.uname().release and facts["boot_id"] and len(facts["boot_id"]) == 36
    assert "dmi_product: /nonexistent/dmi/product_name: No such file or directory" in unknowns


def record(**gpu) -> MachineRecord:
    return MachineRecord(
        driver="amdgpu 6.12.12", gpus=[MachineGpu(index=0, **gpu), MachineGpu(index=1, compute_partition="CPX")]
    )


def test_the_digest_follows_every_field_and_the_trailer_seals_it(tmp_path):
    a, b = record(power_cap_w=750.0), record(power_cap_w=600.0)
    assert machine_digest(a) == machine_digest(MachineRecord.model_validate_json(a.model_dump_json()))
    assert machine_digest(a) != machine_digest(b) and machine_digest(None) is None
    log = tmp_path / "run.log"
    log.write_bytes(b"output\n")
    seal_log(log, RunRecord(exit_code=0, ran=True), "h", None, [0], {"collected": None}, [], machine=a)
    fields, why = read_trailer(log)
    assert why is None and fields[MACHINE] == machine_digest(a)


def test_compare_holds_the_held_gpus_partition_cap_and_the_driver():
    def art(machine, gpus=(0,)) -> Artifact:
        return Artifact(
            topic="t",
            ts="now",
            verdict="PASS",
            target=TargetRecord(name="t", kind="bench"),
            gpus=[GpuRecord(index=i) for i in gpus],
            machine=machine,
            perf=[PerfRow(shape="s", name="n", us_median=1.0)],
        )

    spx, other = art(record(compute_partition="SPX", memory_partition="NPS1")), art(record(compute_partition="DPX"))
    assert machine_facts(spx) == {"driver": "amdgpu 6.12.12", "partition": "SPX/NPS1", "power_cap": None}
    assert [d.field for d in differences(spx, other)] == ["partition"]
    assert held(spx.machine, [1])[0].compute_partition == "CPX"  # GPU 1 held: its partition, not GPU 0's
    assert (
        differences(art(record(compute_partition="SPX"), gpus=(1,)), art(record(compute_partition="DPX"), gpus=(1,)))
        == []
    )
    with pytest.raises(Refused, match="partition .*base SPX/NPS1, head DPX/\\?.*--may-differ partition"):
        decide(spx, other)
    assert [d.field for d in decide(spx, other, may_differ=frozenset({"partition"})).allowed] == ["partition"]
    old = art(None)  # written before the machine was recorded: not refused, noted
    result = decide(old, spx)
    assert result.allowed == [] and any(
        n.startswith("driver (GPU driver version) not recorded by the base") for n in result.notes
    )


def test_may_differ_takes_dashes(capsys):
    from pytest_gpuverify.cli.main import main

    assert main(["compare", "--may-differ", "power-cap,colour", "a.json", "b.json"]) == 2
    err = capsys.readouterr().err
    assert "--may-differ colour: not a fact" in err and "power_cap" in err


def test_the_identity_module_imports_nothing_above_gpu():
    code = (
        "import sys, pytest_gpuverify.gpu.identity; "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_gpuverify.') and m.split('.')[1] in "
        "('place', 'lease', 'engine', 'records', 'compare')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- NVIDIA: NVML through the stand-in pynvml (the H200 capture's values), and the real one on GPU machines


def nvml_identity_module(monkeypatch, mig_error: bool = False):
    class IdentityNvml(FakeNvml):
        """nvidia-ml-py's identity calls, as an H200 answers them (MIG unsupported on the second GPU)."""

        def nvmlSystemGetDriverVersion(self):
            return "580.159.04"

        def nvmlSystemGetCudaDriverVersion_v2(self):
            return 13000

        def nvmlDeviceGetSerial(self, h):
            return f"165482401234{h}"

        def nvmlDeviceGetVbiosVersion(self, h):
            return "96.00.A5.00.01"

        def nvmlDeviceGetPciInfo(self, h):
            return type("PciInfo", (), {"busId": f"00000000:00:0{6 + h}.0".encode()})()

        def nvmlDeviceGetMigMode(self, h):
            if h == 1:
                raise FakeNvmlError(3)  # NVML_ERROR_NOT_SUPPORTED
            return [0, 0]

        def nvmlDeviceGetEnforcedPowerLimit(self, h):
            return 700000  # mW

        def nvmlDeviceGetEccMode(self, h):
            return [1, 1]

        def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
            return 3 if kind == 0 else 0

        def nvmlDeviceGetMaxClockInfo(self, h, clock):
            return {1: 1980, 2: 3201}[clock]

    mod = IdentityNvml([gpu_dev(), gpu_dev(uuid="GPU-0b7c1d2e-3f40-5a6b-7c8d-9e0f1a2b3c4d")])
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


def test_nvml_identity_through_the_stand_in(monkeypatch, tmp_path):
    from pytest_gpuverify.gpu.nvidia import NvidiaBackend

    nvml_identity_module(monkeypatch)
    backend = NvidiaBackend(LocalHost(), use_nvml=True)
    m = read_machine(backend, backend.inventory(), FactsCache(tmp_path))
    assert m.vendor == "nvidia" and m.read_with == "NVML; sysfs, /proc"
    assert (m.driver, m.runtime, m.gpus_visible) == ("nvidia 580.159.04", "CUDA 13.0", 2)
    g0, g1 = m.gpus
    assert (g0.name, g0.arch, g0.serial, g0.vbios, g0.bdf) == (
        "NVIDIA H200",
        "sm_90",
        "1654824012340",
        "96.00.A5.00.01",
        "00000000:00:06.0",
    )
    assert (g0.mig_mode, g0.power_cap_w, g0.ecc_mode, g0.ecc_corrected, g0.ecc_uncorrected) == (
        "disabled",
        700.0,
        "enabled",
        3,
        0,
    )
    assert (g0.sm_mhz_max, g0.mem_mhz_max, g0.compute_partition) == (1980.0, 3201.0, None)
    assert g1.mig_mode is None and "mig_mode of gpu 1: nvmlDeviceGetMigMode: NVMLError(3)" in m.unknowns
    assert machine_line(m).startswith("NVIDIA H200 sm_90, 2 visible, nvidia 580.159.04, CUDA 13.0, MIG disabled, 700 W")


def test_real_nvml_identity_matches_nvidia_smi():
    """On a GPU machine: what NVML gives is what nvidia-smi prints for the same fields."""
    try:
        import pynvml
    except ImportError as exc:
        pytest.skip(f"pynvml not importable: {exc}")
    if isinstance(pynvml, FakeNvml):
        pytest.skip("pynvml is the stand-in")
    from pytest_gpuverify.gpu.nvidia import NvidiaBackend

    nvml = NvidiaBackend(LocalHost(), use_nvml=True)
    try:
        nvml.inventory()
    except Exception as exc:  # GpuToolError: no driver here
        pytest.skip(f"NVML does not start here: {exc}")
    try:
        by_nvml = read_machine(nvml, nvml.inventory())
    finally:
        nvml.close()
    assert by_nvml.driver and by_nvml.driver.startswith("nvidia ") and by_nvml.runtime and by_nvml.gpus_visible
    if LocalHost().which("nvidia-smi"):
        smi = NvidiaBackend(LocalHost(), use_nvml=False)
        by_smi = read_machine(smi, smi.inventory())
        assert by_smi.driver == by_nvml.driver and by_smi.runtime == by_nvml.runtime
        keys = ("uuid", "vbios", "power_cap_w", "mig_mode", "ecc_mode", "sm_mhz_max", "mem_mhz_max")
        assert [{k: getattr(g, k) for k in keys} for g in by_smi.gpus] == [
            {k: getattr(g, k) for k in keys} for g in by_nvml.gpus
        ]
