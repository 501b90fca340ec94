"""Pure parsers for ROCm tool output: amd-smi JSON, rocm-smi JSON and text, rocminfo.

Each takes a tool's stdout as text and returns what it could read; none raises on garbage (deciding
that nothing usable came back is the backend's job). Device indices returned here are the *tool's own*
(amd-smi ``gpu``, rocm-smi ``cardN``/``GPU[N]``): turning them into HIP indices needs a second command.
Formats change between versions (amd-smi's JSON is a list before 26.x and a ``{"gpu_data": [...]}``
object from 26.x; rocm-smi's ``--showmemuse`` changed meaning in ROCm 6.1.2): each parser below says
which forms it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.gpu.base import GpuInfo, GpuProcess, GpuReading

_UNITS = {
    "b": 1,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "tb": 1 << 40,
    "tib": 1 << 40,
}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)?")
_GFX = re.compile(r"gfx[0-9a-f]+")


class AmdSmiDevice(BaseModel):
    """One row of ``amd-smi list [-e] --json``."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    gpu: int
    bdf: str | None = None
    uuid: str | None = None
    kfd_id: int | None = None
    node_id: int | None = None
    partition_id: int | None = None
    hip_id: int | None = None
    hip_uuid: str | None = None


class RocmSmiPid(BaseModel):
    """One row of ``rocm-smi --showpids``. ``gpu_count`` is a count, not an index (rocm_smi_lib #166)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    pid: int
    name: str = ""
    gpu_count: int | None = None
    vram_bytes: int | None = None  # None: UNKNOWN


class RocmSmiProduct(BaseModel):
    """``rocm-smi --showproductname`` for one card. ``node_id`` is the KFD node (HIP order)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    card: int
    series: str | None = None
    gfx: str | None = None
    node_id: int | None = None
    guid: str | None = None


# ------------------------------------------------------------------------------------------ values
def extract_json(text: str) -> Any:
    """The first JSON value in ``text``, or None. Lines before it that do not parse are skipped (amd-smi
    prints its group WARNING to stdout first) and anything after the value is ignored (7.x printed
    several arrays for one command; pastes add prose)."""
    if not text:
        return None
    decoder = json.JSONDecoder()
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.lstrip()
        if body[:1] in ("{", "["):
            try:
                return decoder.raw_decode(text, pos + len(line) - len(body))[0]
            except ValueError:
                pass
        pos += len(line)
    return None


def _str(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return None if text.upper() in ("", "N/A", "NA", "UNKNOWN", "NONE") else text


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = _str(value)
    return int(text) if text is not None and re.fullmatch(r"-?\d+", text) else None


def _num(value: Any) -> float | None:
    """42, 42.0, "42", "42 %", {"value": 42, "unit": "%"} -> 42.0; "N/A", garbage -> None."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _NUMBER.match(value) if isinstance(value, str) else None
    return float(m.group(1)) if m else None


def _bytes(value: Any, default_unit: str) -> int | None:
    """A size in bytes from a bare number (in ``default_unit``), "1.9 GB" or {"value", "unit"}."""
    unit = default_unit
    if isinstance(value, dict):
        unit = str(value.get("unit") or default_unit)
        value = value.get("value")
    elif isinstance(value, str):
        m = _NUMBER.match(value)
        if not m:
            return None
        value, unit = m.group(1), m.group(2) or default_unit
    number = _num(value)
    factor = _UNITS.get(unit.strip().lower())
    if number is None or number < 0 or factor is None:
        return None
    return int(number * factor)


def _arch(value: Any) -> str | None:
    text = _str(value)
    return text if text and _GFX.fullmatch(text) else None


# ------------------------------------------------------------------------------------------ amd-smi
def _gpu_entries(data: Any) -> list[dict]:
    """Per-GPU objects from either envelope: a list (amd-smi < 26) or {"gpu_data": [...]} (26.x, ROCm 7)."""
    if isinstance(data, dict):
        data = data.get("gpu_data", [data] if "gpu" in data else [])
    if not isinstance(data, list):
        return []
    return [e for e in data if isinstance(e, dict) and _int(e.get("gpu")) is not None]


def parse_amd_smi_metric(text: str) -> list[GpuReading]:
    """``amd-smi metric -u -m --json``: gfx_activity % and used/total VRAM (MB) per amd-smi GPU index."""
    out: dict[int, GpuReading] = {}
    for entry in _gpu_entries(extract_json(text)):
        usage, mem = entry.get("usage"), entry.get("mem_usage")
        use = used = total = None
        if isinstance(usage, dict):  # the whole group is the string "N/A" when the activity query failed
            use = _num(usage.get("gfx_activity", usage.get("gfx_usage")))
        if isinstance(mem, dict):
            used = _bytes(mem.get("used_vram", mem.get("vram_used")), "MB")
            total = _bytes(mem.get("total_vram", mem.get("vram_total")), "MB")
        index = _int(entry["gpu"])
        assert index is not None  # _gpu_entries keeps only the entries whose "gpu" is a number
        out.setdefault(index, GpuReading(index=index, use_pct=use, vram_used_bytes=used, vram_total_bytes=total))
    return [out[i] for i in sorted(out)]


def _amd_process(info: dict) -> GpuProcess | None:
    pid = _int(info.get("pid"))
    if pid is None:
        return None
    # vram_mem is the VRAM; mem_usage/mem can read 0 B while vram_mem holds GBs (amdsmi #130 capture)
    memory = info.get("memory_usage")
    vram = _bytes(memory.get("vram_mem"), "B") if isinstance(memory, dict) and "vram_mem" in memory else None
    if vram is None:
        vram = _bytes(info.get("mem_usage", info.get("mem")), "B")
    return GpuProcess(pid=pid, name=_str(info.get("name")) or "", vram_bytes=vram)


def parse_amd_smi_process(text: str) -> dict[int, list[GpuProcess]] | None:
    """``amd-smi process --json``: amd-smi GPU index -> every listed process (0-VRAM ones included).
    None when stdout held no JSON list, so "no process" and "no answer" stay apart. Also reads the
    ``--sort-by-pid`` layout (one entry per PID with ``gpus[].gpu_index``)."""
    data = extract_json(text)
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    if not isinstance(data, list):
        return None
    out: dict[int, list[GpuProcess]] = {}
    for entry in data:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("gpus"), list) and "pid" in entry:
            for per_gpu in entry["gpus"]:
                index = _int(per_gpu.get("gpu_index")) if isinstance(per_gpu, dict) else None
                proc = (
                    _amd_process({**per_gpu, "pid": entry["pid"], "name": entry.get("name")})
                    if index is not None
                    else None
                )
                if proc and index is not None:  # proc is None without an index
                    out.setdefault(index, []).append(proc)
            continue
        index = _int(entry.get("gpu"))
        if index is None:
            continue
        procs = out.setdefault(index, [])
        items = entry.get("process_list")
        for item in items if isinstance(items, list) else [items]:
            info = item.get("process_info", item) if isinstance(item, dict) else None
            proc = _amd_process(info) if isinstance(info, dict) else None  # "No running processes detected"
            if proc:
                procs.append(proc)
    return out


def parse_amd_smi_list(text: str) -> list[AmdSmiDevice]:
    """``amd-smi list [-e] --json`` (``-e`` adds hip_id/hip_uuid, amd-smi 25.3+); CSV names bdf/uuid gpu_*."""
    out = []
    for e in _gpu_entries(extract_json(text)):
        out.append(
            AmdSmiDevice(
                gpu=_int(e["gpu"]),
                bdf=_str(e.get("bdf", e.get("gpu_bdf"))),
                uuid=_str(e.get("uuid", e.get("gpu_uuid"))),
                kfd_id=_int(e.get("kfd_id")),
                node_id=_int(e.get("node_id")),
                partition_id=_int(e.get("partition_id")),
                hip_id=_int(e.get("hip_id")),
                hip_uuid=_str(e.get("hip_uuid")),
            )
        )
    return out


def parse_amd_smi_static(text: str) -> list[GpuInfo]:
    """``amd-smi static --asic --json``: arch and name per amd-smi GPU index (not yet HIP)."""
    out = []
    for e in _gpu_entries(extract_json(text)):
        asic = e["asic"] if isinstance(e.get("asic"), dict) else {}
        board = e["board"] if isinstance(e.get("board"), dict) else {}
        out.append(
            GpuInfo(
                index=_int(e["gpu"]),
                arch=_arch(asic.get("target_graphics_version")),
                name=_str(asic.get("market_name")) or _str(board.get("product_name")),
            )
        )
    return out


# ------------------------------------------------------------------------------------------ rocm-smi
# printLog: 'GPU[%s]\t\t: %s: %s'; pastes collapse the tabs, partitions add ' XCP[n]'
_RSMI_LINE = re.compile(r"^GPU\[(\d+)\](?:\s*XCP\[\d+\])?\s*:\s*(.+?):\s*(.*?)\s*$")
_PIDGPUS = re.compile(r"^PID\s+(\d+)\s+is using\s+(\d+)\s+DRM device\(s\)\s*:?\s*$")


def _cards(data: Any) -> dict[int, dict[str, str]]:
    cards: dict[int, dict[str, str]] = {}
    if isinstance(data, dict):
        for key, fields in data.items():
            m = re.fullmatch(r"card(\d+)", str(key))
            if m and isinstance(fields, dict):
                cards[int(m.group(1))] = {str(k).strip(): str(v).strip() for k, v in fields.items()}
    return cards


def parse_rocm_smi_text(text: str) -> dict[int, dict[str, str]]:
    """``GPU[N]\t\t: metric: value`` lines of any rocm-smi text output -> card -> {metric: value}."""
    cards: dict[int, dict[str, str]] = {}
    for line in (text or "").splitlines():
        m = _RSMI_LINE.match(line.strip())
        if m:  # partitioned devices repeat a metric per XCP: the first one stands for the device
            cards.setdefault(int(m.group(1)), {}).setdefault(m.group(2).strip(), m.group(3).strip())
    return cards


def rocm_smi_readings(cards: dict[int, dict[str, str]]) -> list[GpuReading]:
    """Readings from rocm-smi fields: ``GPU use (%)`` and ``--showmeminfo vram`` bytes. (``--showmemuse``
    percentages are not VRAM bytes and, before 6.1.2, not even allocation.)"""
    return [
        GpuReading(
            index=i,
            use_pct=_num(cards[i].get("GPU use (%)")),
            vram_used_bytes=_int(cards[i].get("VRAM Total Used Memory (B)")),
            vram_total_bytes=_int(cards[i].get("VRAM Total Memory (B)")),
        )
        for i in sorted(cards)
    ]


def parse_rocm_smi_json(text: str) -> list[GpuReading]:
    """``rocm-smi --showuse --showmeminfo vram --json`` (one line, ``cardN`` keys, string values)."""
    return rocm_smi_readings(_cards(extract_json(text)))


def _pid_row(line: str) -> RocmSmiPid | None:
    if "\t" in line:  # print2DArray: ljust-padded cells, each followed by a tab
        cells = [c.strip() for c in line.split("\t")]
    else:  # tabs collapsed to spaces: the name may hold spaces, the last four columns never do
        toks = line.split()
        cells = [toks[0], " ".join(toks[1:-4]), *toks[-4:]] if len(toks) >= 6 else toks
    cells += [""] * (4 - len(cells))
    pid = _int(cells[0])
    if pid is None:
        return None
    return RocmSmiPid(
        pid=pid,
        name=cells[1] if cells[1].upper() != "UNKNOWN" else "",
        gpu_count=_int(cells[2]),
        vram_bytes=_int(cells[3]),
    )


def parse_rocm_smi_showpids(text: str) -> list[RocmSmiPid] | None:
    """``rocm-smi --showpids`` rows, or None when the output has neither the table nor
    ``No KFD PIDs currently running`` (so a broken call is not mistaken for an idle host).
    Also reads the ``--json`` form ``{"system": {"PID1": "name, gpus, vram, sdma, cu"}}``."""
    data = extract_json(text)
    if isinstance(data, dict) and isinstance(data.get("system"), dict):
        rows = []
        for key, value in data["system"].items():
            m = re.fullmatch(r"PID(\d+)", str(key))
            parts = [p.strip() for p in str(value).split(",")]
            if m and len(parts) >= 5:  # JSON joins the lower-cased row with ", " (a spaced name shifts columns)
                rows.append(
                    RocmSmiPid(
                        pid=int(m.group(1)),
                        name=" ".join(parts[:-4]),
                        gpu_count=_int(parts[-4]),
                        vram_bytes=_int(parts[-3]),
                    )
                )
        return rows
    seen, in_table, rows = False, False, []
    for line in (text or "").splitlines():
        body = line.strip()
        if body.startswith("No KFD PIDs currently running"):
            seen, in_table = True, False
        elif body.startswith("KFD process information"):  # some pastes drop the colon
            seen, in_table = True, True
        elif in_table and (not body or body.startswith(("=", "["))):
            in_table = False
        elif in_table and not body.startswith("PID"):
            row = _pid_row(line.rstrip("\n"))
            if row:
                rows.append(row)
    return rows if seen else None


def parse_rocm_smi_showpidgpus(text: str) -> dict[int, list[int]]:
    """``rocm-smi --showpidgpus``: PID -> rocm-smi device indices (empty for ``using 0 DRM device(s)``)."""
    out: dict[int, list[int]] = {}
    current, remaining = None, 0
    for line in (text or "").splitlines():
        body = line.strip()
        m = _PIDGPUS.match(body)
        if m:
            current, remaining = int(m.group(1)), int(m.group(2))
            out[current] = []
        elif current is not None and remaining > 0 and re.fullmatch(r"\d+(\s+\d+)*", body):
            indices = [int(x) for x in body.split()]  # printListLog wraps long lists over several lines
            out[current].extend(indices)
            remaining -= len(indices)
        else:
            current = None
    return out


def drop_kfd_only(processes: Iterable[GpuProcess]) -> list[GpuProcess]:
    """Processes that hold VRAM or whose VRAM is unknown. 0 bytes = the PID merely opened /dev/kfd
    (parent processes, ``kfd_open``, amd-smi listing a PID under every GPU): it holds no GPU."""
    return [p for p in processes if p.vram_bytes != 0]


def attribute_rocm_smi_processes(
    pids: list[RocmSmiPid], pidgpus: dict[int, list[int]], cards: Iterable[int]
) -> dict[int, list[GpuProcess]]:
    """Processes per rocm-smi card. ``--showpids`` gives each PID's GPU *count* and total VRAM,
    ``--showpidgpus`` its cards. Rows with 0 GPUs or 0 bytes are dropped (kfd-open only). A PID whose
    cards are unknown goes on every card: calling a GPU idle while it may be in use is the costly
    mistake. A multi-GPU PID shows its total VRAM on each card (per-card VRAM is not reported)."""
    out: dict[int, list[GpuProcess]] = {c: [] for c in cards}
    merged: dict[int, RocmSmiPid] = {}
    for row in pids:  # `--showpids details` repeats a PID once per device
        old = merged.get(row.pid)
        if old is None:
            merged[row.pid] = row
        else:
            vram = None if old.vram_bytes is None or row.vram_bytes is None else old.vram_bytes + row.vram_bytes
            merged[row.pid] = old.model_copy(update={"vram_bytes": vram})
    for row in merged.values():
        if row.gpu_count == 0 or row.vram_bytes == 0:
            continue
        known = [c for c in pidgpus.get(row.pid, []) if c in out]
        for card in known or list(out):
            out[card].append(GpuProcess(pid=row.pid, name=row.name, vram_bytes=row.vram_bytes))
    return out


def rocm_smi_products(cards: dict[int, dict[str, str]]) -> list[RocmSmiProduct]:
    out = []
    for card in sorted(cards):
        fields = {k.lower(): v for k, v in cards[card].items()}  # ROCm 4.x labels are lower-case
        gfx = _str(fields.get("gfx version"))
        out.append(
            RocmSmiProduct(
                card=card,
                series=_str(fields.get("card series")),
                gfx=gfx if gfx and _GFX.fullmatch(gfx) else None,
                node_id=_int(fields.get("node id")),
                guid=_str(fields.get("guid")),
            )
        )
    return out


def parse_rocm_smi_productname_json(text: str) -> list[RocmSmiProduct]:
    """``rocm-smi --showproductname --json``; falls back to the text layout when no JSON is found.
    ``GFX Version`` can be wrong (MI250X ``gfx9010``, fixed in 6.3/6.4): prefer rocminfo for the arch."""
    data = extract_json(text)
    return rocm_smi_products(_cards(data) if data is not None else parse_rocm_smi_text(text))


def hip_indices_from_nodes(nodes: dict[int, int | None]) -> dict[int, int]:
    """Tool index -> HIP index. HIP numbers GPUs by KFD node id, so a GPU's HIP index is the rank of its
    node among all GPUs' nodes (rocm-smi sorts by BDF since 6.1.0, so orders can differ). Empty when any
    node id is missing or repeated: the caller then falls back to identity and says so."""
    known = {i: v for i, v in nodes.items() if v is not None}
    if not nodes or len(known) != len(nodes) or len(set(known.values())) != len(known):
        return {}
    return {tool: hip for hip, tool in enumerate(sorted(known, key=lambda i: known[i]))}


def hip_indices_from_amd_smi(devices: list[AmdSmiDevice]) -> dict[int, int]:
    """amd-smi index -> HIP index: ``hip_id`` when every device has one, else KFD node rank."""
    hip = {d.gpu: d.hip_id for d in devices}
    if devices and all(v is not None for v in hip.values()) and len(set(hip.values())) == len(hip):
        return hip  # type: ignore[return-value]
    return hip_indices_from_nodes({d.gpu: d.node_id for d in devices})
