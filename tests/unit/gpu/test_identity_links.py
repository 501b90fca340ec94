"""The GPUs' connections to each other (NVLink or PCIe), read from `nvidia-smi topo -m` into the
machine record (gpu/identity.py, records/machine.py), beside each GPU's UUID and MIG mode."""

from __future__ import annotations

import stat
from pathlib import Path

from test_identity import nvml_identity_module

from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.identity_formats import parse_nvidia_topo
from pytest_gpuverify.place.facts_cache import FactsCache
from pytest_gpuverify.place.machine import read_machine
from pytest_gpuverify.records.machine import machine_line

SAMPLES = Path(__file__).parents[2] / "data" / "samples" / "gpu_tools"
HGX = "nvidia-smi_topo_m_8xH100_NV18.txt"
PCIE = "nvidia-smi_topo_m_8xRTX4090_PCIe_nics.txt"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8").split("\n", 1)[1]  # below the source header


def test_an_hgx_matrix_space_aligned_gives_18_nvlinks_between_every_pair():
    links = parse_nvidia_topo(sample(HGX))
    assert sorted(links) == list(range(8))
    assert all(links[i] == {str(j): "NV18" for j in range(8) if j != i} for i in range(8))


def test_a_pcie_host_piped_with_nic_columns_keeps_the_gpu_columns_alone():
    links = parse_nvidia_topo(sample(PCIE))
    assert sorted(links) == list(range(8))  # the NIC rows are no GPU
    assert links[6] == {str(j): "SYS" for j in range(8) if j != 6}  # its PHB to the NICs is left out
    assert set(links[0]) == {"1", "2", "3", "4", "5", "6", "7"}


def test_no_matrix_gives_nothing():
    assert parse_nvidia_topo("") == {} and parse_nvidia_topo("NVIDIA-SMI has failed") == {}


def _nvidia_smi_printing(tmp_path: Path, text: str, monkeypatch) -> None:
    # the tool as the host has it, printing the capture: the reading runs a real subprocess
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    (tmp_path / "topo.txt").write_text(text)
    tool.write_text(f'#!/bin/sh\n[ "$1 $2" = "topo -m" ] && exec cat {tmp_path}/topo.txt\nexit 9\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")


def test_the_record_names_each_gpus_links_uuid_and_mig_mode(monkeypatch, tmp_path):
    from pytest_gpuverify.gpu.nvidia import NvidiaBackend

    _nvidia_smi_printing(tmp_path, sample(HGX), monkeypatch)
    nvml_identity_module(monkeypatch)  # two H200s through the NVML stand-in
    backend = NvidiaBackend(LocalHost(), use_nvml=True)
    m = read_machine(backend, backend.inventory(), FactsCache(tmp_path / "cache"))
    g0, g1 = m.gpus
    assert (g0.links, g1.links) == ({"1": "NV18"}, {"0": "NV18"})  # the capture's other six: not in the GPU list
    assert g0.uuid and g1.uuid and g0.uuid != g1.uuid and g0.mig_mode == "disabled"
    assert "links NV18" in machine_line(m) and not any(u.startswith("links") for u in m.unknowns)


def test_a_failed_topology_read_is_unknown_with_why(monkeypatch, tmp_path):
    from pytest_gpuverify.gpu.nvidia import NvidiaBackend

    _nvidia_smi_printing(tmp_path, "", monkeypatch)
    nvml_identity_module(monkeypatch)
    backend = NvidiaBackend(LocalHost(), use_nvml=True)
    m = read_machine(backend, backend.inventory(), FactsCache(tmp_path / "cache"))
    assert m.gpus[0].links is None and m.gpus[1].links is None
    assert "links of gpu 0, 1: nvidia-smi topo -m has no row" in m.unknowns
    assert "links" not in machine_line(m)
