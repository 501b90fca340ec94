"""ROCm format parsers against real captures (tests/data/samples/gpu_tools) and inline fixtures in the
same formats, so the tests still mean something where the samples are absent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from json_captures import close_json

from pytest_gpuverify.execute.host_commands import CommandResult
from pytest_gpuverify.gpu.base import GpuProcess, GpuToolError
from pytest_gpuverify.gpu.rocm import (
    RocmBackend,
    RocmSmiPid,
    attribute_rocm_smi_processes,
    drop_kfd_only,
    extract_json,
    hip_indices_from_amd_smi,
    hip_indices_from_nodes,
    parse_amd_smi_list,
    parse_amd_smi_metric,
    parse_amd_smi_process,
    parse_amd_smi_static,
    parse_rocm_smi_json,
    parse_rocm_smi_productname_json,
    parse_rocm_smi_showpidgpus,
    parse_rocm_smi_showpids,
    parse_rocm_smi_text,
    parse_rocminfo_arch,
    parse_rocminfo_gpus,
)

SAMPLES = Path(__file__).parents[2] / "data" / "samples" / "gpu_tools"
MIB = 1 << 20


def sample_parts(name: str) -> list[str]:
    """The sample's outputs without its ``# SOURCE`` header, split at ``$ command`` echo lines."""
    path = SAMPLES / name
    if not path.is_file():
        pytest.fail(f"sample {name} not present" + " (tests/data/samples is part of the checkout)")
    parts: list[list[str]] = [[]]
    for line in path.read_text(encoding="utf-8").split("\n")[1:]:
        if line.startswith("$ "):
            parts.append([])
        else:
            parts[-1].append(line)
    return ["\n".join(p) for p in parts if any(x.strip() for x in p)]


def sample(name: str) -> str:
    return "\n".join(sample_parts(name))


# ------------------------------------------------------------------------------------ extract_json
@pytest.mark.parametrize("text", ["", "\n\n", "garbage\n{not json", "WARNING: x\n[1, 2,", "\x00\x01\x02"])
def test_extract_json_garbage_is_none(text):
    assert extract_json(text) is None


def test_extract_json_skips_warning_and_trailing_text():
    text = (
        "WARNING: User is missing the following required groups: render, video. Please add user to these groups.\n"
        '[{"gpu": 0}]\n{"second": 1}\ntrailing words\n'
    )
    assert extract_json(text) == [{"gpu": 0}]
    assert extract_json('[... excerpt ...]\n  {"a": 1} and more') == {"a": 1}


# ------------------------------------------------------------------------------------ amd-smi
METRIC_LIST = json.dumps(
    [
        {
            "gpu": 0,
            "usage": {"gfx_activity": {"value": 0, "unit": "%"}, "umc_activity": "N/A"},
            "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"}, "used_vram": {"value": 283, "unit": "MB"}},
        },
        {"gpu": 1, "usage": "N/A", "mem_usage": {"total_vram": "N/A", "used_vram": {"value": "N/A", "unit": "MB"}}},
    ],
    indent=4,
)


def test_amd_smi_metric_list_envelope_with_na():
    r0, r1 = parse_amd_smi_metric(METRIC_LIST)
    assert (r0.index, r0.use_pct, r0.vram_used_bytes, r0.vram_total_bytes) == (0, 0.0, 283 * MIB, 196592 * MIB)
    assert (r1.index, r1.use_pct, r1.vram_used_bytes, r1.vram_total_bytes) == (1, None, None, None)


def test_amd_smi_metric_gpu_data_envelope_plain_numbers_and_warning():
    text = (
        "WARNING: User is missing the following required groups: render. Please add user to these groups.\n"
        + json.dumps(
            {
                "gpu_data": [
                    {"gpu": 3, "usage": {"gfx_activity": 97}, "mem_usage": {"used_vram": 3072, "total_vram": "8192 MB"}}
                ]
            }
        )
    )
    (r,) = parse_amd_smi_metric(text)
    assert (r.index, r.use_pct, r.vram_used_bytes, r.vram_total_bytes) == (3, 97.0, 3072 * MIB, 8192 * MIB)


@pytest.mark.parametrize("text", ["", "garbage", "[]", '{"gpu_data": "N/A"}', '[{"no_gpu": 1}, 5, "x"]'])
def test_amd_smi_metric_garbage(text):
    assert parse_amd_smi_metric(text) == []


def test_amd_smi_metric_samples():
    (w7700,) = parse_amd_smi_metric(close_json(sample("amd-smi_metric_u_json_W7700_rocm6.x_list_format.txt")))
    assert (w7700.index, w7700.use_pct, w7700.vram_used_bytes) == (0, 42.0, None)
    static_text, metric_text = sample("amd-smi_static_asic_and_metric_u_json_gpu_data_RX7900XTX_rocm7.x.txt").split(
        "\n\n", 1
    )
    (xtx,) = parse_amd_smi_metric(close_json(metric_text))
    assert (xtx.index, xtx.use_pct) == (0, 2.0)
    (info,) = parse_amd_smi_static(static_text)
    assert (info.index, info.arch, info.name) == (0, "gfx1100", "AMD Radeon RX 7900 XTX")
    assert parse_amd_smi_metric(sample("amd-smi_metric_p_json_units_rocm6.1_changelog.txt"))[0].use_pct is None


PROCESS_JSON = json.dumps(
    [
        {"gpu": 0, "process_list": [{"process_info": "No running processes detected"}]},
        {
            "gpu": 1,
            "process_list": [
                {
                    "process_info": {
                        "name": "N/A",
                        "pid": 2266127,
                        "memory_usage": {
                            "gtt_mem": {"value": 0, "unit": "B"},
                            "vram_mem": {"value": 2040109465, "unit": "B"},
                        },
                        "mem_usage": {"value": 0, "unit": "B"},
                    }
                },
                {"process_info": {"name": "python3", "pid": 17, "mem_usage": {"value": 0, "unit": "B"}}},
            ],
        },
    ]
)


def test_amd_smi_process_inline():
    procs = parse_amd_smi_process(PROCESS_JSON)
    assert procs[0] == []
    assert procs[1] == [
        GpuProcess(pid=2266127, name="", vram_bytes=2040109465),
        GpuProcess(pid=17, name="python3", vram_bytes=0),
    ]
    assert drop_kfd_only(procs[1]) == [procs[1][0]]
    assert drop_kfd_only([GpuProcess(pid=1, vram_bytes=None)]) == [GpuProcess(pid=1, vram_bytes=None)]


@pytest.mark.parametrize("text", ["", "garbage", '{"a": 1}', "WARNING: x\n"])
def test_amd_smi_process_no_answer_is_none(text):
    assert parse_amd_smi_process(text) is None


def test_amd_smi_process_samples():
    procs = parse_amd_smi_process(sample("amd-smi_process_json_2procs_rocm6.2_changelog.txt"))
    assert [(p.pid, p.name, p.vram_bytes) for p in procs[0]] == [(420157, "TransferBench", 0), (420315, "rvs", 0)]
    # the PR text holds a literal "..." placeholder: without it the --sort-by-pid layout parses
    raw = sample("amd-smi_process_sort_by_pid_json_rocm7.x_PR6396.txt")
    assert parse_amd_smi_process(raw) is None
    by_pid = parse_amd_smi_process(re.sub(r',\s*"\.\.\."', "", raw))
    assert by_pid[0] == [GpuProcess(pid=2168274, name="/usr/bin/python3.12", vram_bytes=48000)]
    assert by_pid[1] == [GpuProcess(pid=2168274, name="/usr/bin/python3.12", vram_bytes=65588000)]


def test_amd_smi_list_and_hip_map():
    text = json.dumps(
        [
            {
                "gpu": 0,
                "bdf": "0000:05:00.0",
                "uuid": "a",
                "kfd_id": 1,
                "node_id": 9,
                "partition_id": 0,
                "hip_id": 1,
                "hip_uuid": "GPU-aa",
            },
            {
                "gpu": 1,
                "bdf": "0000:26:00.0",
                "uuid": "b",
                "kfd_id": 2,
                "node_id": 8,
                "partition_id": 0,
                "hip_id": 0,
                "hip_uuid": "GPU-bb",
            },
        ],
        indent=4,
    )
    devs = parse_amd_smi_list(text)
    assert [(d.gpu, d.bdf, d.node_id, d.hip_id, d.hip_uuid) for d in devs] == [
        (0, "0000:05:00.0", 9, 1, "GPU-aa"),
        (1, "0000:26:00.0", 8, 0, "GPU-bb"),
    ]
    assert hip_indices_from_amd_smi(devs) == {0: 1, 1: 0}
    no_hip = [d.model_copy(update={"hip_id": None}) for d in devs]
    assert hip_indices_from_amd_smi(no_hip) == {0: 1, 1: 0}  # from node ids
    assert hip_indices_from_amd_smi([d.model_copy(update={"node_id": None}) for d in no_hip]) == {}
    assert parse_amd_smi_list("junk") == []


# ------------------------------------------------------------------------------------ rocm-smi
RSMI_JSON = (
    '{"card0": {"GPU use (%)": "3", "GFX Activity": "50288", "VRAM Total Memory (B)": "206158430208", '
    '"VRAM Total Used Memory (B)": "296747008"}, "card1": {"GPU use (%)": "N/A"}, "system": {}}'
)


def test_rocm_smi_json_inline():
    r0, r1 = parse_rocm_smi_json("\n" + RSMI_JSON + "\n")
    assert (r0.index, r0.use_pct, r0.vram_used_bytes, r0.vram_total_bytes) == (0, 3.0, 296747008, 206158430208)
    assert (r1.index, r1.use_pct, r1.vram_used_bytes) == (1, None, None)
    for junk in ("", "WARNING: No JSON data to report", "garbage {", "[1, 2]"):
        assert parse_rocm_smi_json(junk) == []


def test_rocm_smi_json_samples():
    text = sample("rocm-smi_csv_json_productname_use_meminfo_vram_RX7900XT.txt")
    (r,) = parse_rocm_smi_json(text)
    assert (r.index, r.use_pct, r.vram_total_bytes, r.vram_used_bytes) == (0, 0.0, 21458059264, 27856896)
    (prod,) = parse_rocm_smi_productname_json(text)
    assert (prod.card, prod.node_id, prod.gfx, prod.guid) == (0, 1, "gfx1100", "26967")
    (apu,) = parse_rocm_smi_json(close_json(sample("rocm-smi_json_allinfo_780M_APU_rocm6.2.4_partial.txt")))
    assert (apu.use_pct, apu.vram_used_bytes) == (19.0, None)  # only VRAM% there, which is not bytes
    memuse = parse_rocm_smi_json(sample("rocm-smi_json_showmemuse_rocm5.5_2xRX6800.txt"))
    assert [(r.index, r.use_pct) for r in memuse] == [(0, None), (1, None)]
    (mi250,) = parse_rocm_smi_productname_json(sample("rocm-smi_json_showproductname_MI250X_rocm6.0.txt"))
    assert (mi250.node_id, mi250.gfx) == (7, "gfx9010")  # the MI2xx GFX Version bug, kept as printed


def test_rocm_smi_text_samples():
    uses = parse_rocm_smi_text(sample_parts("rocm-smi_u_4gpu_text.txt")[0])
    assert {i: f["GPU use (%)"] for i, f in uses.items()} == {0: "2", 1: "4", 2: "3", 3: "4"}
    mem = parse_rocm_smi_text(sample("rocm-smi_showmeminfo_vram_text_rocm5.x.txt"))
    assert mem[0] == {"VRAM Total Memory (B)": "4278190080", "VRAM Total Used Memory (B)": "108814336"}
    full = parse_rocm_smi_text(sample("rocm-smi_a_4xMI300X_rocm6.0-6.1.0.txt"))
    assert [full[i]["GPU use (%)"] for i in range(4)] == ["0"] * 4
    assert full[0]["Card series"] == "AMD Instinct MI300X OAM" and full[3]["PCI Bus"] == "0000:85:00.0"


def test_rocm_smi_productname_text_samples_and_hip_map():
    text = sample("rocm-smi_showproductname_4xMI300X_VF_rocm6.x.txt")
    tabbed, collapsed = text.split("### (B)")
    for part in (tabbed, collapsed):
        products = parse_rocm_smi_productname_json(part)
        assert [p.gfx for p in products][:3] == ["gfx942"] * 3
    products = parse_rocm_smi_productname_json(collapsed)
    assert [(p.card, p.node_id, p.series) for p in products] == [(i, 4 + i, "AMD Instinct MI300X VF") for i in range(4)]
    assert hip_indices_from_nodes({p.card: p.node_id for p in products}) == {0: 0, 1: 1, 2: 2, 3: 3}
    (mi100,) = parse_rocm_smi_productname_json(sample("rocm-smi_showproductname_MI100_rocm4.0.txt"))
    assert (mi100.series, mi100.node_id, mi100.gfx) == ("0x738c", None, None)
    assert hip_indices_from_nodes({0: None}) == {}


def test_hip_map_reversed_and_duplicate_nodes():
    assert hip_indices_from_nodes({0: 5, 1: 4, 2: 3, 3: 2}) == {0: 3, 1: 2, 2: 1, 3: 0}
    assert hip_indices_from_nodes({0: 2, 1: 2}) == {}


SHOWPIDS = (
    "\n\n" + "=" * 28 + " ROCm System Management Interface " + "=" * 28 + "\n"
    "===================================== KFD Processes ======================================\n"
    "KFD process information:\n"
    "PID    \tPROCESS NAME\tGPU(s)\tVRAM USED  \tSDMA USED\tCU OCCUPANCY\t\n"
    "4242   \tpython3     \t2     \t85899345920\t0        \t0           \t\n"
    "777    \tkfd_open    \t0     \t0          \t0        \t0           \t\n" + "=" * 90 + "\n"
    "================================== GPUs Indexed by PID ===================================\n"
    "PID 4242 is using 2 DRM device(s):\n3 5 \nPID 777 is using 0 DRM device(s)\n" + "=" * 90 + "\n"
)


def test_rocm_smi_showpids_and_pidgpus_inline():
    rows = parse_rocm_smi_showpids(SHOWPIDS)
    assert rows == [
        RocmSmiPid(pid=4242, name="python3", gpu_count=2, vram_bytes=85899345920),
        RocmSmiPid(pid=777, name="kfd_open", gpu_count=0, vram_bytes=0),
    ]
    pidgpus = parse_rocm_smi_showpidgpus(SHOWPIDS)
    assert pidgpus == {4242: [3, 5], 777: []}
    per_card = attribute_rocm_smi_processes(rows, pidgpus, range(8))
    assert {c: [p.pid for p in ps] for c, ps in per_card.items() if ps} == {3: [4242], 5: [4242]}
    collapsed = SHOWPIDS.replace("\t", " ")
    assert parse_rocm_smi_showpids(collapsed) == rows
    assert parse_rocm_smi_showpids('{"system": {"PID4242": "my job, 1, 1024, 0, 0"}}') == [
        RocmSmiPid(pid=4242, name="my job", gpu_count=1, vram_bytes=1024)
    ]


@pytest.mark.parametrize("text", ["", "garbage\n", "\n\n" + "=" * 90 + "\n" + "=" * 90 + "\n"])
def test_rocm_smi_showpids_unusable_is_none(text):
    assert parse_rocm_smi_showpids(text) is None
    assert parse_rocm_smi_showpidgpus(text) == {}


def test_rocm_smi_showpids_samples():
    (kfd_open,) = parse_rocm_smi_showpids(sample("rocm-smi_showpids_MI300A_kfd_open_only_rocm6.3.txt"))
    assert (kfd_open.pid, kfd_open.name, kfd_open.gpu_count, kfd_open.vram_bytes) == (1684258, "kfd_open", 0, 0)
    assert attribute_rocm_smi_processes([kfd_open], {}, [0]) == {0: []}
    many = parse_rocm_smi_showpids(sample("rocm-smi_showpids_many_procs_gpu0count_2025.txt"))
    assert len(many) == 8
    per_card = attribute_rocm_smi_processes(many, {}, [0, 1])  # no --showpidgpus: on every card
    assert per_card[0] == per_card[1] == [GpuProcess(pid=1168514, name="pt_main_thread", vram_bytes=177386942464)]
    unknown = parse_rocm_smi_showpids(sample("rocm-smi_showpids_not_supported_rocm6.0-6.1.txt"))
    assert [(r.pid, r.gpu_count, r.vram_bytes) for r in unknown] == [
        (55573, 1, None),
        (55571, 1, None),
        (55574, 1, None),
        (55572, 1, None),
    ]
    assert len(attribute_rocm_smi_processes(unknown, {}, [0])[0]) == 4  # UNKNOWN VRAM is kept
    details, summary = sample_parts("rocm-smi_showpids_details_and_summary_MI50_rocm6.4.2.txt")
    assert [(r.pid, r.vram_bytes) for r in parse_rocm_smi_showpids(details)] == [
        (132174, 15053770752),
        (132174, 16869904384),
    ]
    merged = attribute_rocm_smi_processes(parse_rocm_smi_showpids(details), {132174: [0, 1]}, [0, 1])
    assert merged[0] == [GpuProcess(pid=132174, name="llama-server", vram_bytes=15053770752 + 16869904384)]
    assert [(r.pid, r.gpu_count, r.vram_bytes) for r in parse_rocm_smi_showpids(summary)] == [
        (74853, 0, 0),
        (132174, 2, None),
    ]
    full = sample("rocm-smi_a_4xMI300X_rocm6.0-6.1.0.txt")
    (ghost,) = parse_rocm_smi_showpids(full)
    assert (ghost.pid, ghost.name, ghost.gpu_count, ghost.vram_bytes) == (1188185, "", 0, None)
    assert parse_rocm_smi_showpidgpus(full) == {1188185: []}


def test_rocm_smi_showpidgpus_sample_blocks():
    blocks = [
        parse_rocm_smi_showpidgpus(b)
        for b in sample("rocm-smi_showpidgpus_concise_csv_sonar_testdata_rocm5.x.txt").split("-----")
    ]
    assert blocks[:7] == [
        {},
        {28156: [0, 1], 28154: [0]},
        {25774: [0]},
        {},
        {28156: [1], 28154: [0]},
        {29212: [0, 1]},
        {25774: [0]},
    ]


# ------------------------------------------------------------------------------------ rocminfo
ROCMINFO = """ROCk module version 6.10.5 is loaded
*******                  
Agent 1                  
*******                  
  Name:                    AMD EPYC 9654 96-Core Processor    
  Node:                    0                                  
  Device Type:             CPU                                
*******                  
Agent 2                  
*******                  
  Name:                    gfx950                             
  Uuid:                    GPU-1234abcd5678ef90               
  Marketing Name:          AMD Instinct MI355X                
  Node:                    1                                  
  Device Type:             GPU                                
  ISA Info:                
    ISA 1                    
      Name:                    amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-
    ISA 2                    
      Name:                    amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-
*** Done ***             
"""


def test_rocminfo_inline():
    assert parse_rocminfo_arch(ROCMINFO) == "gfx950"
    (gpu,) = parse_rocminfo_gpus(ROCMINFO)
    assert (gpu.arch, gpu.name, gpu.uuid, gpu.node) == ("gfx950", "AMD Instinct MI355X", "GPU-1234abcd5678ef90", 1)
    only_isa = "      Name:                    amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-\n"
    assert parse_rocminfo_arch(only_isa) is None and parse_rocminfo_gpus(only_isa) == []
    for junk in ("", "garbage", "\x00\x01"):
        assert parse_rocminfo_arch(junk) is None and parse_rocminfo_gpus(junk) == []


def test_rocminfo_samples():
    text = sample("rocminfo_4xMI300X.txt")
    assert parse_rocminfo_arch(text) == "gfx942"
    gpus = parse_rocminfo_gpus(text)
    assert [(g.arch, g.node) for g in gpus] == [("gfx942", n) for n in (2, 3, 4, 5)]
    assert gpus[0].uuid == "GPU-8d1457e2c20f59d2" and gpus[0].name == "AMD Instinct MI300X"
    mi250 = sample("rocminfo_MI250X_agent16_gfx90a_rocm6.x.txt")
    assert parse_rocminfo_arch(mi250) == "gfx90a"
    assert [(g.arch, g.node, g.uuid) for g in parse_rocminfo_gpus(mi250)] == [("gfx90a", 15, "GPU-124d13ccd7b050e5")]
    grep = sample("rocminfo_grep_Name_MI308X_generic_isa.txt")
    assert parse_rocminfo_arch(grep) == "gfx942"
    assert [(g.arch, g.name) for g in parse_rocminfo_gpus(grep)] == [("gfx942", "AMD Instinct MI308X")]


# ------------------------------------------------------------------------------------ backend, scripted host
class ScriptedHost:
    """A HostRunner answering from a dict of argv -> (rc, stdout, stderr) or "timeout"."""

    name = "scripted"

    def __init__(self, answers: dict[tuple[str, ...], object], tools=("amd-smi", "rocm-smi", "rocminfo")):
        self.answers, self.tools, self.calls = answers, tools, []

    def which(self, program):
        return f"/opt/rocm/bin/{program}" if program in self.tools else None

    def run(self, argv, timeout=30.0, env=None):
        argv = tuple(argv)
        self.calls.append(argv)
        answer = self.answers.get(argv)
        if answer is None:
            return CommandResult(argv, 2, b"", b"usage: unknown arguments")
        if answer == "timeout":
            return CommandResult(argv, -9, b"", b"", timed_out=True)
        rc, out, err = answer
        return CommandResult(argv, rc, out.encode(), err.encode())


def test_backend_amd_smi_garbage_falls_back_to_rocm_smi_and_remembers():
    host = ScriptedHost(
        {
            ("amd-smi", "metric", "-u", "-m", "--json"): (0, "garbage", ""),
            ("rocm-smi", "--showuse", "--showmeminfo", "vram", "--json"): (0, RSMI_JSON, ""),
            ("rocm-smi", "--showpids", "--showpidgpus"): (0, SHOWPIDS.replace("3 5", "0 1"), ""),
            ("rocm-smi", "--showproductname", "--json"): (
                0,
                '{"card0": {"Node ID": "3"}, "card1": {"Node ID": "2"}}',
                "",
            ),
        }
    )
    backend = RocmBackend(host)
    readings = backend.read()
    assert [r.index for r in readings] == [0, 1]
    assert readings[1].use_pct == 3.0 and [p.pid for p in readings[1].processes] == [4242]  # card0 = HIP 1
    assert any("amd-smi" in n for n in backend.notes)
    first = sum(c[0] == "amd-smi" for c in host.calls)
    assert first <= 2  # one reading: its two calls run at once
    backend.read()
    assert sum(c[0] == "amd-smi" for c in host.calls) == first, "a broken amd-smi is not asked again"


def test_backend_errors_name_the_tool():
    host = ScriptedHost({("rocm-smi", "--showuse", "--showmeminfo", "vram", "--json"): "timeout"}, tools=("rocm-smi",))
    with pytest.raises(GpuToolError, match="rocm-smi"):
        RocmBackend(host, tool_timeout=1).read()
    host = ScriptedHost(
        {("amd-smi", "metric", "-u", "-m", "--json"): (1, "", "AMDSMI_STATUS_DRM_ERROR")}, tools=("amd-smi",)
    )
    with pytest.raises(GpuToolError, match="amd-smi.*AMDSMI_STATUS_DRM_ERROR"):
        RocmBackend(host).read()
    with pytest.raises(GpuToolError, match="neither amd-smi nor rocm-smi"):
        RocmBackend(ScriptedHost({}, tools=())).read()


def test_visible_value_is_hip_indices():
    from pytest_gpuverify.gpu.base import GpuInfo

    backend = RocmBackend(ScriptedHost({}))
    assert backend.visible_value([GpuInfo(index=3), GpuInfo(index=1)]) == "3,1"
    assert (backend.vendor, backend.visible_devices_var) == ("rocm", "HIP_VISIBLE_DEVICES")
