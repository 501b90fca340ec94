"""Pure parsers of what the tools and the kernel print about a machine's identity: per GPU its name,
arch, serial, VBIOS, partition modes and power cap; for the host its driver and GPU runtime.

Each returns plain values (``None``: not printed, or printed as N/A) keyed by the tool's own device
index, as the other parsers do (rocm_formats.py). Formats read:

- ``rocm-smi --showproductname --showvbios --showserial --showcomputepartition --showmemorypartition
  --showmaxpower --showdriverversion --showbus [--json]``: per card ``Card Series``, ``GFX Version``, ``Node ID``,
  ``VBIOS version``, ``Serial Number``, ``PCI Bus``, ``Compute Partition``, ``Memory Partition``,
  ``Max Graphics Package Power (W)``; the driver in ``system`` (JSON) or a ``Driver version:`` line.
- ``amd-smi static [--json]`` (a list before amd-smi 26, ``{"gpu_data": [...]}`` from 26; or the text): ``asic``,
  ``board``, ``vbios`` (``ifwi`` from ROCm 7), ``driver``, ``partition``, ``limit``, ``bus``.
- ``amd-smi version``: ``... | ROCm version: 6.4.1 | amdgpu version: 6.10.5 | ...``.
- ``/proc/driver/nvidia/version``; ``nvidia-smi --query-gpu=<IDENTITY_FIELDS> --format=csv,noheader,nounits``;
  the ``CUDA Version: 12.8`` of nvidia-smi's default view.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_gpuverify.gpu.rocm_formats import _cards, _gpu_entries, _int, _num, _str, extract_json, parse_rocm_smi_text

Facts = dict[str, Any]

ROCM_SMI_STATIC = ("rocm-smi", "--showproductname", "--showvbios", "--showserial", "--showbus", "--json")
ROCM_SMI_VOLATILE = (
    "rocm-smi",
    "--showproductname",
    "--showcomputepartition",
    "--showmemorypartition",
    "--showmaxpower",
    "--showdriverversion",
    "--json",
)
# nvidia-smi query fields without commas in their values (the name is read with the inventory)
NVIDIA_IDENTITY_FIELDS = (
    "index",
    "serial",
    "vbios_version",
    "pci.bus_id",
    "driver_version",
    "power.limit",
    "mig.mode.current",
    "ecc.mode.current",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "clocks.max.sm",
    "clocks.max.memory",
)
_PARTITION = re.compile(r"^(SPX|DPX|TPX|QPX|CPX|NPS\d+)$", re.I)
_DRIVER_LINE = re.compile(r"^\s*Driver version:\s*(\S+)\s*$", re.M)
_GFX = re.compile(r"^gfx[0-9a-f]+$")


def partition(value: Any) -> str | None:
    """ "SPX", "nps1" -> "SPX", "NPS1"; anything else (N/A, a garbled value) -> None."""
    text = _str(value)
    return text.upper() if text and _PARTITION.match(text) else None


def watts(value: Any) -> float | None:
    number = _num(value)
    return number if number is not None and 0 < number < 100_000 else None


def serial(value: Any) -> str | None:
    """A serial as printed; 0, "0x0" and the tools' placeholders are no serial."""
    text = _str(value)
    return None if text is None or text.lower() in ("0", "0x0", "0x0000000000000000") else text


# ------------------------------------------------------------------------------------------ rocm-smi
def parse_rocm_smi_identity(text: str) -> tuple[dict[int, Facts], str | None]:
    """(card -> facts, driver version) from the rocm-smi calls above, JSON or text."""
    data = extract_json(text)
    cards = _cards(data) if isinstance(data, dict) else parse_rocm_smi_text(text)
    driver = None
    if isinstance(data, dict) and isinstance(data.get("system"), dict):
        driver = _str(data["system"].get("Driver version"))
    elif data is None:
        m = _DRIVER_LINE.search(text or "")
        driver = _str(m.group(1)) if m else None
    out: dict[int, Facts] = {}
    for card, fields in cards.items():
        low = {k.lower(): v for k, v in fields.items()}  # ROCm 4.x labels are lower-case
        gfx = _str(low.get("gfx version"))
        out[card] = {
            "name": _str(low.get("card series")),
            "arch": gfx if gfx and _GFX.match(gfx) else None,
            "node_id": _int(low.get("node id")),
            "vbios": _str(low.get("vbios version")),
            "serial": serial(low.get("serial number")),
            "bdf": _str(low.get("pci bus")),
            "compute_partition": partition(low.get("compute partition")),
            "memory_partition": partition(low.get("memory partition")),
            "power_cap_w": watts(low.get("max graphics package power (w)")),
        }
    return out, driver


# ------------------------------------------------------------------------------------------ amd-smi
def _section(entry: dict, *names: str) -> dict:
    for name in names:
        value = entry.get(name)
        if isinstance(value, dict):
            return value
    return {}


def _power_limit(limit: dict) -> float | None:
    """The power cap set now, ``static --limit``'s ``socket_power`` (``max_power`` is the most it can
    be set to, not the cap)."""
    return watts(limit.get("socket_power"))


def amd_smi_text_entries(text: str) -> list[dict]:
    """``amd-smi static``'s text (``GPU: 0`` then ``    ASIC:`` sections of ``        KEY: value``) as the
    JSON's per-GPU objects, keys lower-cased."""
    entries: list[dict] = []
    section: dict | None = None
    for line in (text or "").splitlines():
        body = line.strip()
        name, sep, value = body.partition(":")
        if not sep or line.startswith("#"):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        if depth == 0 and name == "GPU" and value.strip().isdigit():
            entries.append({"gpu": int(value)})
            section = None
        elif entries and depth == 1 and not value.strip():
            section = entries[-1].setdefault(name.strip().lower(), {})
        elif entries and depth == 2 and section is not None:
            section[name.strip().lower()] = value.strip()
    return entries


def parse_amd_smi_identity(text: str) -> tuple[dict[int, Facts], str | None]:
    """(amd-smi index -> facts, driver version) from ``amd-smi static [--json]``."""
    out: dict[int, Facts] = {}
    driver = None
    data = extract_json(text)
    for entry in _gpu_entries(data) if data is not None else amd_smi_text_entries(text):
        asic, board = _section(entry, "asic"), _section(entry, "board")
        vbios, part = _section(entry, "vbios", "ifwi"), _section(entry, "partition")
        drv = _section(entry, "driver")
        driver = driver or _str(drv.get("version"))
        arch = _str(asic.get("target_graphics_version"))
        out[int(entry["gpu"])] = {
            "name": _str(asic.get("market_name")),
            "arch": arch if arch and _GFX.match(arch) else None,
            "serial": serial(board.get("product_serial")) or serial(asic.get("asic_serial")),
            "vbios": _str(vbios.get("version")) or _str(vbios.get("vbios_version")),
            "bdf": _str(_section(entry, "bus").get("bdf")),
            "compute_partition": partition(part.get("compute_partition")),
            "memory_partition": partition(part.get("memory_partition")),
            "power_cap_w": _power_limit(_section(entry, "limit")),
        }
    return out, driver


def parse_amd_smi_version(text: str) -> dict[str, str]:
    """``amd-smi version``'s ``name: value`` pairs, lower-cased names: {"rocm version": "6.4.1", ...}."""
    out = {}
    for part in (text or "").replace("\n", "|").split("|"):
        name, sep, value = part.partition(":")
        if sep and _str(value):
            out[name.strip().lower()] = value.strip()
    return out


# ------------------------------------------------------------------------------------------ NVIDIA
_NVRM = re.compile(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)")
_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")


def parse_nvidia_proc_version(text: str) -> str | None:
    """The kernel module's version from ``/proc/driver/nvidia/version`` (``NVRM version: NVIDIA UNIX
    Open Kernel Module for x86_64  570.133.20  Release Build ...``)."""
    m = _NVRM.search(text or "")
    return m.group(1) if m else None


def parse_nvidia_smi_cuda(text: str) -> str | None:
    m = _CUDA.search(text or "")
    return m.group(1) if m else None


def cuda_version(value: Any) -> str | None:
    """NVML's ``nvmlSystemGetCudaDriverVersion`` integer (12080) -> "12.8"."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def _mode(value: Any) -> str | None:
    text = _str(value)
    if text is None or text.startswith("["):
        return None
    return text.lower() if text.lower() in ("enabled", "disabled") else None


def parse_nvidia_identity_csv(text: str) -> tuple[dict[int, Facts], str | None]:
    """(index -> facts, driver version) from the ``--query-gpu`` of :data:`NVIDIA_IDENTITY_FIELDS`;
    ``[N/A]``-like values are unknown; a line of another shape (an error between rows) is skipped."""
    out: dict[int, Facts] = {}
    driver = None
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(NVIDIA_IDENTITY_FIELDS) or not cells[0].isdigit():
            continue
        row = dict(zip(NVIDIA_IDENTITY_FIELDS, [None if c.startswith("[") else c for c in cells]))
        driver = driver or _str(row["driver_version"])
        out[int(cells[0])] = {
            "serial": serial(row["serial"]),
            "vbios": _str(row["vbios_version"]),
            "bdf": _str(row["pci.bus_id"]),
            "power_cap_w": watts(row["power.limit"]),
            "mig_mode": _mode(row["mig.mode.current"]),
            "ecc_mode": _mode(row["ecc.mode.current"]),
            "ecc_corrected": _int(row["ecc.errors.corrected.volatile.total"]),
            "ecc_uncorrected": _int(row["ecc.errors.uncorrected.volatile.total"]),
            "sm_mhz_max": _num(row["clocks.max.sm"]),
            "mem_mhz_max": _num(row["clocks.max.memory"]),
        }
    return out, driver


def _topo_cells(line: str) -> list[str]:
    # a pipe gets tabs; a terminal gets columns padded with spaces ("CPU Affinity" has one space inside)
    return [c.strip() for c in (line.split("\t") if "\t" in line else re.split(r"\s{2,}", line.strip()))]


def parse_nvidia_topo(text: str) -> dict[int, dict[str, str]]:
    """``nvidia-smi topo -m``'s GPU-to-GPU matrix: GPU index -> {peer index: connection}, the connection
    as the tool names it (``NV18``: 18 bonded NVLinks; ``SYS``, ``NODE``, ``PHB``, ``PXB``, ``PIX``: PCIe
    paths). NIC rows and columns, the affinity columns and the legend are left out; {} when no matrix."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    header = next((ln for ln in lines if re.match(r"\s+GPU0\b", ln)), None)
    if header is None:
        return {}
    columns = [c for c in _topo_cells(header) if c]
    gpu_cols = [(n, int(c[3:])) for n, c in enumerate(columns) if re.fullmatch(r"GPU\d+", c)]
    out: dict[int, dict[str, str]] = {}
    for line in lines[lines.index(header) + 1 :]:
        cells = _topo_cells(line)
        row = re.fullmatch(r"GPU(\d+)", cells[0])
        if row is None:
            if cells[0].startswith("Legend"):
                break
            continue  # a NIC's row, a MIG device's
        index, values = int(row[1]), cells[1:]
        out[index] = {
            str(peer): values[n]
            for n, peer in gpu_cols
            if n < len(values) and peer != index and values[n] not in ("X", "")
        }
    return out
