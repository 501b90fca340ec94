"""Pure parsers for ``nvidia-smi --query-* --format=csv`` output and compute capabilities.

The CSV is not real CSV: fields are joined by ``", "`` with no quoting, so a product name holding a
comma spreads over several fields. Every row is therefore read from both ends: the fields before the
name and after it have fixed positions, and whatever lies between is the name.

Unsupported or unreadable values print as ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]`` ...
even with ``nounits``; they become ``None`` (unknown), never 0, because the sampler treats unknown
as busy. Errors are printed on stdout between the rows (``Unable to determine the device handle for
GPU0000:01:00.0: GPU has fallen off the bus.``); such lines are not rows and are returned apart by the
``*_lines`` variants, so a caller can report them.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

MIB = 1 << 20

#: Fields asked of ``--query-gpu``; ``compute_cap`` last so it can be dropped for older drivers.
QUERY_GPU_FIELDS = ("index", "uuid", "name", "utilization.gpu", "memory.used", "memory.total", "compute_cap")
QUERY_APPS_FIELDS = ("gpu_uuid", "pid", "used_memory")

_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(%|MiB|KiB|GiB|B)?\s*$")
_UUID = re.compile(r"^(GPU|MIG)-[0-9A-Za-z][0-9A-Za-z/-]*$")
_COMPUTE_CAP = re.compile(r"^(\d{1,2})\.(\d{1,2})$")
_UNIT_BYTES = {None: MIB, "MiB": MIB, "KiB": 1 << 10, "GiB": 1 << 30, "B": 1}


class SmiGpu(BaseModel):
    """One row of ``--query-gpu``. ``index`` is nvidia-smi's (NVML, PCI bus order)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    uuid: str | None = None
    name: str | None = None
    use_pct: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    compute_cap: str | None = None  # "9.0" as printed; see arch_from_compute_cap

    @property
    def arch(self) -> str | None:
        return arch_from_compute_cap(self.compute_cap or "")


class SmiApp(BaseModel):
    """One row of ``--query-compute-apps``. ``vram_bytes`` None: the tool could not say."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    gpu_uuid: str | None = None
    pid: int
    name: str = ""
    vram_bytes: int | None = None


def is_uuid(text: str | None) -> bool:
    return bool(text and _UUID.match(text))


def _value(field: str) -> str | None:
    """The field, or None for ``[N/A]``-like placeholders and empty fields."""
    field = field.strip()
    if not field or field.startswith("[") or field.upper() in ("N/A", "NOT SUPPORTED", "UNKNOWN"):
        return None
    return field


def _pct(field: str) -> float | None:
    m = _NUMBER.match(field)
    if not m or m.group(2) not in (None, "%"):
        return None
    value = float(m.group(1))
    return value if 0.0 <= value <= 100.0 else None


def _bytes(field: str) -> int | None:
    """A memory field in MiB (``nounits``) or with its unit printed, as bytes."""
    m = _NUMBER.match(field)
    if not m or m.group(2) == "%":
        return None
    value = float(m.group(1))
    return int(value * _UNIT_BYTES[m.group(2)]) if value >= 0 else None


def _int(field: str) -> int | None:
    field = field.strip()
    return int(field) if field.isdigit() else None


def _split(line: str) -> list[str]:
    return [f.strip() for f in line.split(",")]


def _lines(text: str) -> list[str]:
    """Non-empty lines, headers (``index, uuid, ...`` from ``--format=csv``) dropped."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and _split(line)[0].lower() not in ("index", "gpu_uuid", "uuid", "pid"):
            out.append(line)
    return out


def _looks_like_cap(field: str) -> bool:
    return bool(_COMPUTE_CAP.match(field.strip()))


def _gpu_row(line: str, with_compute_cap: bool | None) -> SmiGpu | None:
    parts = _split(line)
    cap_here = with_compute_cap
    if cap_here is None:
        last = parts[-1]
        if _looks_like_cap(last):
            cap_here = True
        elif _bytes(last) is not None:
            cap_here = False
        else:  # [N/A] last: ambiguous, decide by the field count
            cap_here = len(parts) >= 7
    tail = 4 if cap_here else 3
    if len(parts) < 3 + tail:
        return None
    index = _int(parts[0])
    uuid = _value(parts[1])
    if index is None or (uuid is not None and not is_uuid(uuid)):
        return None  # an error message, garbage, or a row of some other query
    name = ",".join(line.split(",")[2 : len(parts) - tail]).strip()  # as printed, commas and all
    fields = parts[len(parts) - tail :]
    use, used, total = (_value(f) for f in fields[:3])
    cap = _value(fields[3]) if cap_here else None
    return SmiGpu(
        index=index,
        uuid=uuid,
        name=_value(name),
        use_pct=_pct(use) if use is not None else None,
        vram_used_bytes=_bytes(used) if used is not None else None,
        vram_total_bytes=_bytes(total) if total is not None else None,
        compute_cap=cap if cap is not None and _looks_like_cap(cap) else None,
    )


def parse_query_gpu_csv_lines(text: str, with_compute_cap: bool | None = None) -> tuple[list[SmiGpu], list[str]]:
    """(rows sorted by index, lines that were not rows: error messages, garbage)."""
    rows: dict[int, SmiGpu] = {}
    other: list[str] = []
    for line in _lines(text):
        row = _gpu_row(line, with_compute_cap)
        if row is None:
            other.append(line)
        else:
            rows[row.index] = row
    return [rows[i] for i in sorted(rows)], other


def parse_query_gpu_csv(text: str, with_compute_cap: bool | None = None) -> list[SmiGpu]:
    """Rows of ``--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total[,compute_cap]``
    (``--format=csv,noheader,nounits``; headers and units are tolerated too), sorted by index.

    ``with_compute_cap``: whether the query asked for ``compute_cap``; None guesses per row (a last
    field ``9.0`` is a compute capability, ``143771`` a memory size). Lines that are not rows (error
    messages, garbage) are skipped; :func:`parse_query_gpu_csv_lines` returns them too."""
    return parse_query_gpu_csv_lines(text, with_compute_cap)[0]


def _app_row(line: str) -> SmiApp | None:
    parts = _split(line)
    if len(parts) < 3:
        return None
    uuid, pid = _value(parts[0]), _int(parts[1])
    if pid is None or (uuid is not None and not is_uuid(uuid)):
        return None
    used = _value(parts[-1])
    return SmiApp(
        gpu_uuid=uuid,
        pid=pid,
        name=",".join(line.split(",")[2:-1]).strip(),
        vram_bytes=_bytes(used) if used is not None else None,
    )


def parse_compute_apps_csv_lines(text: str) -> tuple[list[SmiApp], list[str]]:
    """(rows, lines that were not rows)."""
    rows: list[SmiApp] = []
    other: list[str] = []
    for line in _lines(text):
        row = _app_row(line)
        if row is None:
            other.append(line)
        else:
            rows.append(row)
    return rows, other


def parse_compute_apps_csv(text: str) -> list[SmiApp]:
    """Rows of ``--query-compute-apps=gpu_uuid,pid,used_memory`` (also ``gpu_uuid,pid,process_name,
    used_memory``: the process name is whatever lies between pid and the last field). An idle GPU
    prints nothing (noheader) or the header only; ``[N/A]`` memory stays None (unknown)."""
    return parse_compute_apps_csv_lines(text)[0]


def arch_from_compute_cap(text: object) -> str | None:
    """``9.0`` → ``sm_90``, ``10.0`` → ``sm_100``, ``(8, 9)`` → ``sm_89``; None for ``[N/A]``, empty
    or anything else. Multi-line text: its first non-empty line (an error line there gives None)."""
    if isinstance(text, (tuple, list)) and len(text) == 2:
        major, minor = text
        if isinstance(major, int) and isinstance(minor, int) and major > 0 and minor >= 0:
            return f"sm_{major}{minor}"
        return None
    if not isinstance(text, str):
        return None
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    m = _COMPUTE_CAP.match(line)
    if not m or int(m.group(1)) == 0:
        return None
    return f"sm_{int(m.group(1))}{int(m.group(2))}"


SMI = "nvidia-smi"
SMI_APPS = (SMI, "--query-compute-apps=" + ",".join(QUERY_APPS_FIELDS), "--format=csv,noheader,nounits")

# NVML "not available" values, and the 32-bit one some 530-era drivers return as garbage (nvitop #75)
_SENTINELS = frozenset({0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF})
_MAX_PLAUSIBLE_BYTES = 1 << 50  # 1 PiB: no GPU holds that; anything larger is a scrambled value


def smi_query_gpu_argv(with_compute_cap: bool = True) -> tuple[str, ...]:
    fields = QUERY_GPU_FIELDS if with_compute_cap else QUERY_GPU_FIELDS[:-1]
    return (SMI, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits")


def plausible_bytes(value: Any, total: int | None = None) -> int | None:
    """A byte count from NVML, or None where it is a sentinel or garbage (unknown)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    if value < 0 or value in _SENTINELS or value >= _MAX_PLAUSIBLE_BYTES:
        return None
    if total and value > total:
        return None
    return value


def text_value(value: Any) -> str | None:
    """A name or UUID as NVML returns it (str, or bytes in old bindings); None when empty or not text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return None
    return value.strip() or None
