"""NVIDIA backend: the nvidia-smi CSV parsers against real H200 captures (tests/data/samples/gpu_tools) and
inline fixtures in the same formats (so they mean something where the samples are absent); the
nvidia-smi path through a real LocalHost and a fake ``nvidia-smi`` script; the NVML path's logic
through a stand-in ``pynvml`` module; and the real NVML where ``pynvml`` initialises (GPU machines)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_nvml import H200_UUID, FakeNvml, FakeNvmlError, gpu_dev

from pytest_gpuverify.execute.host_commands import CommandResult, LocalHost
from pytest_gpuverify.gpu.base import GpuInfo, GpuToolError
from pytest_gpuverify.gpu.nvidia import (
    NvidiaBackend,
    arch_from_compute_cap,
    parse_compute_apps_csv,
    parse_compute_apps_csv_lines,
    parse_query_gpu_csv,
    parse_query_gpu_csv_lines,
    plausible_bytes,
    smi_query_gpu_argv,
)
from pytest_gpuverify.lease.sampler import IdleCriteria, busy_reason

SAMPLES = Path(__file__).parents[2] / "data" / "samples" / "gpu_tools"
MIB = 1 << 20
UUID_B = "GPU-0b7c1d2e-3f40-5a6b-7c8d-9e0f1a2b3c4d"
H200_TOTAL = 143771 * MIB


def sample_text(name: str) -> str:
    """The capture without its ``# SOURCE`` header and without command echo lines (``$ ...``,
    ``+ ...`` from ``set -x``), section marks (``### ...``) and ``rc=N`` lines."""
    path = SAMPLES / name
    if not path.is_file():
        pytest.fail(f"sample {name} not present" + " (tests/data/samples is part of the checkout)")
    lines = path.read_text(encoding="utf-8").split("\n")[1:]
    keep = [ln for ln in lines if not ln.startswith(("$ ", "+ ", "### ", "rc="))]
    return "\n".join(keep)


# ---------------------------------------------------------------------------------- H200 samples
def test_sample_idle_queries():
    text = sample_text("nvidia-smi_idle_queries_H200.txt")
    gpus, other = parse_query_gpu_csv_lines(text)
    # the noheader,nounits row and the csv-with-units row describe the same GPU; the default view,
    # -L and --version lines are not rows
    assert len(gpus) == 1
    g = gpus[0]
    assert (g.index, g.uuid, g.name, g.use_pct, g.vram_used_bytes, g.vram_total_bytes) == (
        0,
        H200_UUID,
        "NVIDIA H200",
        0.0,
        0,
        H200_TOTAL,
    )
    assert g.compute_cap is None and g.arch is None  # the capture did not ask compute_cap
    assert any("NVIDIA-SMI" in line for line in other)
    # an idle GPU: the apps query printed its header only (csv) or nothing (noheader)
    assert parse_compute_apps_csv(text) == []
    first = text.strip().split("\n")[0]
    assert parse_query_gpu_csv(first, with_compute_cap=False) == gpus


def test_sample_busy():
    text = sample_text("nvidia-smi_and_pynvml_busy_H200.txt")
    gpus = parse_query_gpu_csv(text)
    assert len(gpus) == 1
    assert (gpus[0].use_pct, gpus[0].vram_used_bytes) == (100.0, 1231 * MIB)
    apps = parse_compute_apps_csv(text)  # the same process, printed with units and without
    assert [(a.gpu_uuid, a.pid, a.vram_bytes) for a in apps] == [(H200_UUID, 499, 1222 * MIB)] * 2


def test_sample_just_after_load_is_idle_by_smi():
    text = sample_text("nvidia-smi_and_pynvml_just_after_load_H200.txt")
    gpus = parse_query_gpu_csv(text)
    assert [(g.use_pct, g.vram_used_bytes) for g in gpus] == [(0.0, 0)]
    assert parse_compute_apps_csv(text) == []


def test_sample_q_d_units_process_name_and_no_devices():
    text = sample_text("nvidia-smi_q_d_UTILIZATION_and_nvml_procs_H200.txt")
    gpus, other = parse_query_gpu_csv_lines(text)
    assert [(g.index, g.use_pct, g.vram_used_bytes, g.vram_total_bytes) for g in gpus] == [
        (0, 100.0, 1231 * MIB, H200_TOTAL)
    ]
    apps = parse_compute_apps_csv(text)
    assert [(a.pid, a.name, a.vram_bytes) for a in apps] == [(677, "python3", 1222 * MIB)]
    assert "No devices were found" in other
    # `index, pci.bus_id, uuid` rows belong to another query: not taken for a GPU row
    assert all(g.uuid == H200_UUID for g in gpus)


def test_sample_cuda_visible_devices_uuid_prefix_selects_the_gpu():
    text = sample_text("cuda_visible_devices_vs_nvidia-smi_H200.txt")
    counts = {
        line.split("'")[1]: int(line.split("torch count: ")[1].split(";")[0])
        for line in text.splitlines()
        if line.startswith("CUDA_VISIBLE_DEVICES=")
    }
    assert counts["GPU-65f1"] == 1 and counts["1"] == 0 and counts[""] == 0
    backend = NvidiaBackend(LocalHost(), use_nvml=False)
    value = backend.visible_value([GpuInfo(index=0, uuid=H200_UUID)])
    assert value.startswith("GPU-65f1") and value == H200_UUID


# ---------------------------------------------------------------------------------- inline fixtures
IDLE = f"0, {H200_UUID}, NVIDIA H200, 0, 0, 143771, 9.0\n"
TWO = f"0, {H200_UUID}, NVIDIA H200, 0, 0, 143771, 9.0\n1, {UUID_B}, NVIDIA H200, 100, 1231, 143771, 9.0\n"
BUSY_APPS = f"{UUID_B}, 499, 1222\n"
NA = (
    f"0, {H200_UUID}, NVIDIA GB10, [N/A], [N/A], [N/A], 12.1\n"
    f"1, {UUID_B}, NVIDIA A100-SXM4-80GB, [Not Supported], 10, 81920, [N/A]\n"
)
FELL_OFF = (
    "Unable to determine the device handle for GPU0000:01:00.0: GPU has fallen off the bus.\n"
    f"1, {UUID_B}, NVIDIA H200, 0, 0, 143771, 9.0\n"
)
GARBAGE = "\x00\x01 segfault\n0, GPU-abc, NVIDIA\nfoo, bar, baz, 1, 2, 3\n<html>, 1, 2\n12, 34\n"


def test_inline_idle():
    (g,) = parse_query_gpu_csv(IDLE)
    assert (g.index, g.uuid, g.name, g.use_pct, g.vram_used_bytes, g.vram_total_bytes, g.arch) == (
        0,
        H200_UUID,
        "NVIDIA H200",
        0.0,
        0,
        H200_TOTAL,
        "sm_90",
    )
    assert parse_compute_apps_csv("") == []


def test_inline_busy():
    gpus = parse_query_gpu_csv(TWO, with_compute_cap=True)
    assert [(g.index, g.use_pct, g.vram_used_bytes) for g in gpus] == [(0, 0.0, 0), (1, 100.0, 1231 * MIB)]
    (app,) = parse_compute_apps_csv(BUSY_APPS)
    assert (app.gpu_uuid, app.pid, app.name, app.vram_bytes) == (UUID_B, 499, "", 1222 * MIB)


def test_inline_not_available_fields_are_unknown():
    g0, g1 = parse_query_gpu_csv(NA)
    assert (g0.use_pct, g0.vram_used_bytes, g0.vram_total_bytes, g0.arch) == (None, None, None, "sm_121")
    assert (g1.use_pct, g1.vram_used_bytes, g1.vram_total_bytes, g1.arch) == (None, 10 * MIB, 81920 * MIB, None)
    (app,) = parse_compute_apps_csv(f"{UUID_B}, 12, [N/A]\n")
    assert app.vram_bytes is None


def test_inline_error_line_is_not_a_row():
    gpus, other = parse_query_gpu_csv_lines(FELL_OFF)
    assert [g.index for g in gpus] == [1]
    assert other == [FELL_OFF.splitlines()[0]]
    assert parse_query_gpu_csv("No devices were found\n") == []


def test_inline_garbage_and_empty():
    assert parse_query_gpu_csv(GARBAGE) == []
    assert parse_compute_apps_csv(GARBAGE) == []
    for text in ("", "\n\n", "   \n"):
        assert parse_query_gpu_csv(text) == [] and parse_compute_apps_csv(text) == []
    apps, other = parse_compute_apps_csv_lines("No running processes found\n")
    assert apps == [] and other == ["No running processes found"]


def test_inline_names_with_commas_and_spaces():
    text = f"3, {H200_UUID}, NVIDIA RTX 6000 Ada Generation,Rev 2, 5, 10, 49140, 8.9\n"
    (g,) = parse_query_gpu_csv(text)
    assert (g.index, g.name, g.use_pct, g.vram_total_bytes, g.arch) == (
        3,
        "NVIDIA RTX 6000 Ada Generation,Rev 2",
        5.0,
        49140 * MIB,
        "sm_89",
    )
    (app,) = parse_compute_apps_csv(f"{H200_UUID}, 77, my, odd name, 12 MiB\n")
    assert (app.pid, app.name, app.vram_bytes) == (77, "my, odd name", 12 * MIB)


def test_inline_without_compute_cap_and_header_with_units():
    text = (
        "index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
        f"0, {H200_UUID}, NVIDIA H200, 7 %, 100 MiB, 143771 MiB\n"
    )
    (g,) = parse_query_gpu_csv(text)
    assert (g.use_pct, g.vram_used_bytes, g.arch) == (7.0, 100 * MIB, None)
    (g,) = parse_query_gpu_csv(f"0, {H200_UUID}, NVIDIA H200, 0, 0, 143771\n", with_compute_cap=False)
    assert g.vram_total_bytes == H200_TOTAL


@pytest.mark.parametrize(
    "text,arch",
    [
        ("9.0", "sm_90"),
        (" 8.9\n", "sm_89"),
        ("10.0", "sm_100"),
        ("12.1", "sm_121"),
        ("7.5", "sm_75"),
        ((9, 0), "sm_90"),
        ("[N/A]", None),
        ("", None),
        ("9", None),
        ("sm_90", None),
        ("0.0", None),
        ('Field "compute_cap" is not a valid field to query.', None),
        ("GPU0000:01:00.0", None),
        (None, None),
    ],
)
def test_arch_from_compute_cap(text, arch):
    assert arch_from_compute_cap(text) == arch


def test_plausible_bytes():
    assert plausible_bytes(1281359872) == 1281359872
    assert plausible_bytes(0) == 0
    for bad in (None, 4294967295, 0xFFFFFFFFFFFFFFFF, -1, 1 << 60, "x"):
        assert plausible_bytes(bad) is None
    assert plausible_bytes(200, total=100) is None


# ---------------------------------------------------------------------------------- fake nvidia-smi
class FakeSmi:
    """A real ``nvidia-smi`` shell script in tmp_path, found through a LocalHost's PATH. Each query
    prints its file and exits with its code; ``hang`` makes it sleep; every call is logged."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path / "fake-smi"
        self.bin = self.dir / "bin"
        self.bin.mkdir(parents=True)
        self.log = self.dir / "calls.log"
        self.set(gpu=IDLE, apps="")

    def set(
        self,
        gpu: str = IDLE,
        apps: str = "",
        gpu_rc: int = 0,
        apps_rc: int = 0,
        hang: bool = False,
        no_cap: str | None = None,
    ) -> FakeSmi:
        """``no_cap``: what the query without compute_cap prints; when set, the query with it is
        rejected as an older driver rejects it."""
        (self.dir / "gpu.txt").write_text(gpu)
        (self.dir / "apps.txt").write_text(apps)
        (self.dir / "nocap.txt").write_text(no_cap or "")
        hang_line = "exec sleep 30\n" if hang else ""
        cap_branch = (
            '  --query-gpu=*compute_cap*) echo "Field \\"compute_cap\\" is not a valid field to query."; exit 2 ;;\n'
            f'  --query-gpu=*) cat "$D/nocap.txt"; exit {gpu_rc} ;;\n'
            if no_cap is not None
            else f'  --query-gpu=*) cat "$D/gpu.txt"; exit {gpu_rc} ;;\n'
        )
        script = (
            "#!/bin/sh\n"
            f'D="{self.dir}"\n'
            'echo "$*" >> "$D/calls.log"\n'
            f"{hang_line}"
            'case "$1" in\n'
            f"{cap_branch}"
            f'  --query-compute-apps=*) cat "$D/apps.txt"; exit {apps_rc} ;;\n'
            "esac\n"
            "echo 'Invalid combination of input arguments.'; exit 2\n"
        )
        path = self.bin / "nvidia-smi"
        path.write_text(script)
        path.chmod(0o755)
        return self

    def host(self) -> LocalHost:
        return LocalHost(env={**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"})

    def backend(self, **kw) -> NvidiaBackend:
        kw.setdefault("use_nvml", False)
        return NvidiaBackend(self.host(), **kw)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def smi(tmp_path):
    return FakeSmi(tmp_path)


def test_smi_idle_gpu(smi):
    backend = smi.backend()
    (r,) = backend.read()
    assert (r.index, r.use_pct, r.vram_used_bytes, r.vram_total_bytes, r.processes) == (0, 0.0, 0, H200_TOTAL, ())
    assert busy_reason(r, IdleCriteria()) is None
    (info,) = backend.inventory()
    assert (info.index, info.arch, info.name, info.uuid) == (0, "sm_90", "NVIDIA H200", H200_UUID)
    assert backend.host_arch() == "sm_90"
    assert backend.visible_value([info]) == H200_UUID
    gpu_query = " ".join(smi_query_gpu_argv(True)[1:])
    apps_query = "--query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits"
    assert smi.calls() == [gpu_query, apps_query, gpu_query]


def test_smi_busy_process_is_attributed_by_uuid(smi):
    smi.set(gpu=TWO, apps=BUSY_APPS)
    r0, r1 = smi.backend().read()
    assert r0.processes == () and busy_reason(r0, IdleCriteria()) is None
    (proc,) = r1.processes
    assert (proc.pid, proc.vram_bytes) == (499, 1222 * MIB)
    assert busy_reason(r1, IdleCriteria()) == "use 100%"
    smi.set(gpu=TWO.replace(", 100, 1231,", ", 0, 0,"), apps=BUSY_APPS)  # a process idling at 0 % still counts
    assert "process 499" in busy_reason(smi.backend().read()[1], IdleCriteria())


def test_smi_not_available_counts_as_busy(smi):
    smi.set(gpu=NA, apps=f"{UUID_B}, 12, [N/A]\n")
    backend = smi.backend()
    r0, r1 = backend.read()
    assert busy_reason(r0, IdleCriteria()) == "use unknown"
    assert r1.processes[0].vram_bytes is None
    infos = backend.inventory()
    assert [i.arch for i in infos] == ["sm_121", None]
    assert backend.host_arch() == "sm_121"


def test_smi_process_without_gpu_uuid_counts_on_every_gpu(smi):
    smi.set(gpu=TWO, apps="[N/A], 55, 10\n")
    backend = smi.backend()
    assert [[p.pid for p in r.processes] for r in backend.read()] == [[55], [55]]
    assert any("process 55" in n for n in backend.notes)


def test_smi_error_line_leaves_that_gpu_out(smi):
    smi.set(gpu=FELL_OFF, gpu_rc=15)
    backend = smi.backend()
    assert [r.index for r in backend.read()] == [1]
    assert any("fallen off the bus" in n for n in backend.notes)


def test_smi_no_devices_exit_6(smi):
    smi.set(gpu="No devices were found\n", gpu_rc=6)
    with pytest.raises(GpuToolError, match=r"nvidia-smi.*exit 6.*No devices were found"):
        smi.backend().read()
    with pytest.raises(GpuToolError, match="No devices were found"):
        smi.backend().host_arch()


def test_smi_garbage_is_an_error(smi):
    smi.set(gpu=GARBAGE)
    with pytest.raises(GpuToolError, match="no GPU in its output"):
        smi.backend().read()


def test_smi_apps_failure_is_an_error(smi):
    smi.set(gpu=IDLE, apps="Unable to determine the device handle for GPU0000:01:00.0: Unknown Error\n", apps_rc=15)
    with pytest.raises(GpuToolError, match=r"query-compute-apps.*exit 15"):
        smi.backend().read()


def test_smi_hang_times_out(smi):
    smi.set(hang=True)
    backend = smi.backend(tool_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(GpuToolError, match=r"nvidia-smi: no answer within 0.3 s"):
        backend.read()
    assert time.monotonic() - t0 < 5


def test_smi_missing(tmp_path):
    backend = NvidiaBackend(LocalHost(env={"PATH": str(tmp_path)}), use_nvml=False)
    with pytest.raises(GpuToolError, match="nvidia-smi: not found on local"):
        backend.read()


def test_smi_older_driver_without_compute_cap(smi):
    smi.set(no_cap=f"0, {H200_UUID}, NVIDIA H200, 0, 0, 143771\n")
    backend = smi.backend()
    assert [r.index for r in backend.read()] == [0]
    backend.read()
    # asked with compute_cap once, then never again
    assert sum("compute_cap" in c for c in smi.calls()) == 1
    assert backend.inventory()[0].arch is None and backend.host_arch() is None
    assert any("compute_cap" in n for n in backend.notes)


def test_visible_value_uuids_in_order_and_index_fallback():
    backend = NvidiaBackend(LocalHost(), use_nvml=False)
    a, b = GpuInfo(index=0, uuid=H200_UUID), GpuInfo(index=1, uuid=UUID_B)
    assert backend.visible_value([b, a]) == f"{UUID_B},{H200_UUID}"
    assert backend.visible_value([]) == ""
    assert backend.visible_value([b, GpuInfo(index=3)]) == "1,3"
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in n for n in backend.notes)
    assert (backend.vendor, backend.visible_devices_var) == ("nvidia", "CUDA_VISIBLE_DEVICES")


class RemoteHost:
    """A HostRunner that is not this machine; answers from canned outputs."""

    name = "ssh:gpu-box"

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs, self.argvs = outputs, []

    def which(self, program: str) -> str | None:
        return "/usr/bin/" + program

    def run(self, argv, timeout=30.0, env=None) -> CommandResult:
        self.argvs.append(tuple(argv))
        key = "gpu" if argv[1].startswith("--query-gpu") else "apps"
        return CommandResult(tuple(argv), 0, self.outputs[key].encode(), b"")


def test_remote_host_uses_nvidia_smi_even_with_pynvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu_dev()]))
    host = RemoteHost({"gpu": TWO, "apps": BUSY_APPS})
    backend = NvidiaBackend(host)
    assert [len(r.processes) for r in backend.read()] == [0, 1]
    assert all(a[0] == "nvidia-smi" for a in host.argvs)
    assert sys.modules["pynvml"].inits == 0
    with pytest.raises(ValueError):
        NvidiaBackend(host, use_nvml=True)


@pytest.fixture
def fake_nvml(monkeypatch):
    def install(devices: list[dict], init_error: int | None = None) -> FakeNvml:
        mod = FakeNvml(devices, init_error)
        monkeypatch.setitem(sys.modules, "pynvml", mod)
        return mod

    return install


def test_nvml_memory_v2_and_burst_between_readings(fake_nvml):
    dev = gpu_dev(samples=[(100, 0), (200, 98), (300, 0)], rate=0)
    nv = fake_nvml([dev])
    backend = NvidiaBackend(LocalHost())
    (r,) = backend.read()
    # v2: reserved memory is not "used" (v1 would say 615 MiB on an idle H200)
    assert (r.vram_used_bytes, r.vram_total_bytes) == (0, 150754820096)
    assert r.use_pct == 98.0  # the burst between two readings, though the instant value is 0
    dev["samples"] += [(400, 0), (500, 1)]
    assert backend.read()[0].use_pct == 1.0
    dev["rate"] = 7  # no new sample since the last reading: the instantaneous rate
    assert backend.read()[0].use_pct == 7.0
    assert nv.sample_calls == [0, 300, 500]
    assert backend.using_nvml and nv.inits == 1
    assert backend.notes == []


def test_nvml_processes_and_sentinels(fake_nvml):
    fake_nvml([gpu_dev(procs=[(499, 1281359872), (500, None), (501, 4294967295), (502, 1 << 62), (13, 0)])])
    (r,) = NvidiaBackend(LocalHost()).read()
    assert [(p.pid, p.vram_bytes) for p in r.processes] == [
        (499, 1281359872),
        (500, None),
        (501, None),
        (502, None),
        (13, 0),
    ]
    assert r.processes[0].name == "python3" and r.processes[-1].name == ""
    assert busy_reason(r, IdleCriteria()) == "process 499 (python3) on it"


def test_nvml_memory_v1_fallbacks(fake_nvml):
    nv = fake_nvml([gpu_dev()])
    del FakeNvml.nvmlMemory_v2  # bindings older than memory v2
    try:
        backend = NvidiaBackend(LocalHost())
        assert backend.read()[0].vram_used_bytes == 644939776
        assert any("reserved" in n for n in backend.notes)
    finally:
        FakeNvml.nvmlMemory_v2 = 0x02000028

    def v2_missing(h, version=None):
        if version:
            raise FakeNvmlError(13)  # NVML_ERROR_FUNCTION_NOT_FOUND: driver without _v2
        return SimpleNamespace(total=150754820096, used=644939776)

    nv.nvmlDeviceGetMemoryInfo = v2_missing
    backend = NvidiaBackend(LocalHost())
    assert backend.read()[0].vram_used_bytes == 644939776
    assert any("v2 unavailable" in n for n in backend.notes)


def test_nvml_unreadable_gpu_is_left_out(fake_nvml):
    fake_nvml([gpu_dev(handle_error=15), gpu_dev(uuid=UUID_B, procs_error=999)])
    # GPU 0 lost, GPU 1's processes unreadable: neither is in the reading, so both count as busy
    fake = sys.modules["pynvml"]
    fake.devices.append(gpu_dev(uuid="GPU-ffffffff-0000-0000-0000-000000000002"))
    backend = NvidiaBackend(LocalHost())
    assert [r.index for r in backend.read()] == [2]
    assert any("HandleByIndex(0)" in n for n in backend.notes) and any("processes of GPU 1" in n for n in backend.notes)


def test_nvml_init_failure_falls_back_to_smi(fake_nvml, smi):
    fake_nvml([gpu_dev()], init_error=9)  # NVML_ERROR_DRIVER_NOT_LOADED
    backend = NvidiaBackend(smi.host())
    assert backend.read()[0].index == 0 and smi.calls()
    assert any("nvmlInit failed" in n for n in backend.notes)
    with pytest.raises(GpuToolError, match="NVML unavailable: nvmlInit failed"):
        NvidiaBackend(smi.host(), use_nvml=True).read()


def test_nvml_unsupported_process_list_switches_to_smi(fake_nvml, smi):
    smi.set(gpu=TWO, apps=BUSY_APPS)
    nv = fake_nvml([gpu_dev(procs_error=13)])
    backend = NvidiaBackend(smi.host())
    assert len(backend.read()) == 2  # nvidia-smi's two GPUs, not NVML's one
    assert nv.shutdowns == 1 and not backend.using_nvml
    assert any("nvidia-smi used from now on" in n for n in backend.notes)


def test_a_hung_nvml_call_hands_over_to_smi_without_shutting_nvml_down(fake_nvml, smi):
    smi.set(gpu=TWO, apps=BUSY_APPS)
    nv = fake_nvml([gpu_dev()])
    release = threading.Event()
    nv.nvmlDeviceGetComputeRunningProcesses = lambda h: release.wait()  # a driver that never answers
    backend = NvidiaBackend(smi.host(), tool_timeout=1.0)
    try:
        assert len(backend.read()) == 2  # nvidia-smi's two GPUs
    finally:
        release.set()
    assert nv.shutdowns == 0, "nvmlShutdown beside a hung call could hang too"
    assert not backend.using_nvml and any("no answer within 1 s" in n for n in backend.notes)


def test_nvml_inventory_close_and_reinit(fake_nvml):
    nv = fake_nvml([gpu_dev(), gpu_dev(uuid=UUID_B, cc=(10, 0), name=b"NVIDIA B200")])
    backend = NvidiaBackend(LocalHost())
    infos = backend.inventory()
    assert [(i.index, i.arch, i.name, i.uuid) for i in infos] == [
        (0, "sm_90", "NVIDIA H200", H200_UUID),
        (1, "sm_100", "NVIDIA B200", UUID_B),
    ]
    assert backend.host_arch() == "sm_90"
    assert backend.visible_value(infos[::-1]) == f"{UUID_B},{H200_UUID}"
    backend.close()
    backend.close()
    assert nv.shutdowns == 1
    backend.read()
    assert nv.inits == 2


# ---------------------------------------------------------------------------------- real NVML
@pytest.fixture
def real_nvml():
    try:
        import pynvml
    except ImportError as exc:
        pytest.skip(f"pynvml not importable: {exc}")
    if isinstance(pynvml, FakeNvml):
        pytest.skip("pynvml is the stand-in")
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError) as exc:
        pytest.skip(f"nvmlInit failed (no NVIDIA driver here): {exc}")
    yield pynvml
    pynvml.nvmlShutdown()


def test_real_nvml_matches_nvidia_smi(real_nvml):
    backend = NvidiaBackend(LocalHost(), use_nvml=True)
    try:
        readings = backend.read()
        assert readings and [r.index for r in readings] == list(range(real_nvml.nvmlDeviceGetCount()))
        for r in readings:
            assert r.use_pct is not None and 0 <= r.use_pct <= 100
            assert r.vram_total_bytes and 0 <= (r.vram_used_bytes or 0) <= r.vram_total_bytes
        assert backend.read()  # a second reading: only samples newer than the first
        infos = backend.inventory()
        assert all(i.uuid and i.uuid.startswith("GPU-") and i.arch and i.arch.startswith("sm_") for i in infos)
        assert backend.host_arch() == infos[0].arch
        assert backend.visible_value(infos) == ",".join(i.uuid for i in infos)
        if LocalHost().which("nvidia-smi"):
            smi = NvidiaBackend(LocalHost(), use_nvml=False)
            assert [(i.index, i.uuid, i.arch) for i in smi.inventory()] == [(i.index, i.uuid, i.arch) for i in infos]
            assert [r.vram_total_bytes // MIB for r in smi.read()] == [r.vram_total_bytes // MIB for r in readings]
        assert backend.notes == []
    finally:
        backend.close()


# ---------------------------------------------------------------------------------- NVML history (stand-in)
def _buffer(now_us: int, values: list[int], every_us: int = 200_000) -> list[tuple[int, int]]:
    """A driver buffer: ``values`` oldest first, one sample per ``every_us``, the newest 50 ms old."""
    return [(now_us - 50_000 - every_us * (len(values) - 1 - k), v) for k, v in enumerate(values)]


def test_nvml_history_gives_the_window_at_once(fake_nvml):
    now_us = int(time.time() * 1e6)
    # 14 s of samples: busy long ago (outside a 2 s window), idle in it
    fake_nvml(
        [
            gpu_dev(samples=_buffer(now_us, [100] * 60 + [0] * 10)),
            gpu_dev(uuid=UUID_B, samples=_buffer(now_us, [0] * 60 + [0, 0, 0, 40, 0, 0, 0, 0, 0, 0])),
        ]
    )
    backend = NvidiaBackend(LocalHost())
    got, why = backend.history(2.0)
    assert got is not None and why == ""
    r0, r1 = got.readings
    assert (r0.use_pct, r1.use_pct) == (0.0, 40.0), "the highest sample inside the window, nothing older"
    assert r0.vram_used_bytes == 0 and r0.vram_total_bytes == 150754820096
    assert busy_reason(r0, IdleCriteria()) is None and busy_reason(r1, IdleCriteria()) == "use 40%"


def test_nvml_history_counts_a_process_that_used_the_gpu_in_the_window(fake_nvml):
    now_us = int(time.time() * 1e6)
    fake_nvml(
        [
            gpu_dev(
                samples=_buffer(now_us, [0] * 70),
                proc_samples=[(now_us - 1_000_000, 4242, 0), (now_us - 9_000_000, 77, 90)],
            )
        ]
    )
    got, _ = NvidiaBackend(LocalHost()).history(2.0)
    (r,) = got.readings
    assert [p.pid for p in r.processes] == [4242], "the process of 1 s ago, not the one of 9 s ago"
    assert busy_reason(r, IdleCriteria()).startswith("process 4242")


@pytest.mark.parametrize(
    "dev,why",
    [
        (lambda now: gpu_dev(samples=_buffer(now, [0] * 5)), "reach back 0.9 s, less than the window"),
        (lambda now: gpu_dev(samples=[(now - 5_000_000 - k * 200_000, 0) for k in range(40)]), "is 5.0 s old"),
        (lambda now: gpu_dev(samples=[]), "holds no utilisation sample"),
        (lambda now: gpu_dev(samples=_buffer(now, [0] * 70), proc_util_error=3), "nvmlDeviceGetProcessUtilization"),
    ],
)
def test_nvml_history_too_short_or_unsupported_says_why(fake_nvml, dev, why):
    fake_nvml([dev(int(time.time() * 1e6))])
    got, note = NvidiaBackend(LocalHost()).history(2.0)
    assert got is None and why in note


def test_the_first_pick_waits_no_window_where_nvml_keeps_history(fake_nvml, tmp_path):
    """The sampler's first window comes from the driver: full at once, judged by the same rules."""
    from pytest_gpuverify.lease.sampler import IdleSampler
    from pytest_gpuverify.lease.window_history import DRIVER, WINDOW, history_source

    now_us = int(time.time() * 1e6)
    nv = fake_nvml(
        [gpu_dev(samples=_buffer(now_us, [0] * 70)), gpu_dev(uuid=UUID_B, samples=_buffer(now_us, [0] * 65 + [99] * 5))]
    )
    backend = NvidiaBackend(LocalHost())
    source = history_source(backend, None, "sm_90", str(tmp_path / "gpu-<id>.lock"), 0.4)
    sampler = IdleSampler(backend, 2.0, interval_s=0.4, history=source)
    t0 = time.monotonic()
    sampler.start()
    try:
        assert sampler.wait_for_full_window(timeout=0.05), "the window is full from the start"
        assert time.monotonic() - t0 < 1.5
        assert sampler.window_source == DRIVER
        verdict = sampler.judge_window()
        assert verdict.idle == [0] and verdict.busy == {1: "use 99%"}
    finally:
        sampler.stop()
    nv.devices[0]["samples"] = _buffer(now_us, [0] * 3)  # a driver just loaded: sample the window
    sampler = IdleSampler(
        NvidiaBackend(LocalHost()),
        2.0,
        interval_s=0.4,
        history=history_source(NvidiaBackend(LocalHost()), None, "sm_90", "/x/gpu-<id>.lock", 0.4),
    )
    sampler.start()
    try:
        assert not sampler.wait_for_full_window(timeout=0.3)
        assert sampler.window_source == WINDOW and "less than the window" in sampler.window_note
    finally:
        sampler.stop()


def test_real_nvml_history_spans_the_window(real_nvml):
    """The driver's buffers reach back over a default window (the H200 keeps ~14 s)."""
    backend = NvidiaBackend(LocalHost(), use_nvml=True)
    try:
        got, why = backend.history(2.0)
        assert got is not None, why
        assert [r.index for r in got.readings] == list(range(real_nvml.nvmlDeviceGetCount()))
        assert all(r.use_pct is not None and 0 <= r.use_pct <= 100 and r.vram_total_bytes for r in got.readings)
    finally:
        backend.close()


def test_a_gpu_busy_just_before_the_session_is_waited_for_not_refused(fake_nvml, tmp_path):
    """History says GPU 0 was busy 1.2 s ago: not idle yet. The first pick (--gpu-wait 0) waits, as
    long as a window it would have sampled itself, until that moment leaves the window, then takes it."""
    from pytest_gpuverify.config.envfile import parse_lock_prefix
    from pytest_gpuverify.lease.picker import GpuPicker
    from pytest_gpuverify.lease.sampler import IdleSampler
    from pytest_gpuverify.lease.window_history import DRIVER, history_source

    now_us = int(time.time() * 1e6)
    values = [0] * 60 + [99] * 2 + [0] * 6  # 99 % from about 1.6 to 1.2 s ago, idle since
    fake_nvml([gpu_dev(samples=_buffer(now_us, values))])
    backend = NvidiaBackend(LocalHost())
    lock = parse_lock_prefix(f"flock -w 600 {tmp_path}/gpu-<id>.lock")
    sampler = IdleSampler(
        backend,
        2.0,
        interval_s=0.4,
        lock_path_for=lock.path_for,
        history=history_source(backend, None, "sm_90", lock.path_template, 0.4),
    )
    sampler.start()
    try:
        assert sampler.window_source == DRIVER and sampler.judge_window().busy == {0: "use 99%"}
        t0 = time.monotonic()
        grant = GpuPicker(sampler, lock, LocalHost()).acquire(wait_s=0)
        waited = time.monotonic() - t0
        assert grant.indices == [0] and 0.2 < waited < 2.5, waited
        grant.leases[0].release()
    finally:
        sampler.stop()
