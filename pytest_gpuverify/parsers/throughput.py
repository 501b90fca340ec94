"""Throughput lines as perf rows, so floors can hold them and compare can pair them.

Read (case-insensitive), each as one row of shape ``throughput`` whose ``metrics`` hold the numbers:

- vLLM ``bench throughput``: ``Throughput: 12.34 requests/s, 4567.89 total tokens/s, 2345.67 output tokens/s``
  (older: ``Throughput: X requests/s, Y tokens/s``) -> ``req/s``, ``total tok/s``, ``output tok/s``
- vLLM ``bench serve`` and sglang's benchmarks: ``Output token throughput (tok/s):   1234.56``,
  ``Total Token throughput (tok/s): ...``, ``Request throughput (req/s): ...``, ``Input token ...``,
  ``Peak output token ...`` -> ``output tok/s``, ``total tok/s``, ``req/s``, ``input tok/s``, ...
- any other ``<label>: <number> tok/s`` (or ``token/s``, ``tokens/s``), e.g. sglang's
  ``median throughput:   1234.56 token/s`` -> ``<label> tok/s`` (``tok/s`` without a label)
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import Optional

from pytest_gpuverify.records.artifact import PerfRow

_N = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_VLLM = re.compile(rf"^\s*Throughput:\s*{_N}\s*requests/s,\s*{_N}\s*(total )?tokens/s(?:,\s*{_N}\s*output tokens/s)?", re.I)
_SERVE = re.compile(rf"^\s*(?P<label>[A-Za-z][A-Za-z ]*?)\s*throughput\s*\((?P<unit>req|tok)/s\):\s*(?P<v>{_N[1:-1]})\s*$", re.I)
_TOKS = re.compile(rf"(?P<label>[A-Za-z][\w -]*?)?\s*[:=]\s*(?P<v>{_N[1:-1]})\s*(?:tok|tokens?)/s\b", re.I)
SHAPE = "throughput"


def _label(words: str) -> str:
    words = re.sub(r"\b(?:throughput|token|tokens)\b", " ", words.lower())
    return " ".join(words.replace("_", " ").split())


def read_line(lineno: int, line: str) -> Optional[PerfRow]:
    low = line.lower()
    if "/s" not in low or ("tok" not in low and "req" not in low):  # tqdm's ``it/s`` is no throughput line
        return None
    m = _VLLM.match(line)
    if m:
        metrics = {"req/s": float(m[1]), ("total tok/s" if m[3] or m[4] else "tok/s"): float(m[2])}
        if m[4]:
            metrics["output tok/s"] = float(m[4])
        return PerfRow(shape=SHAPE, name="Throughput", metrics=metrics, source_line=lineno)
    m = _SERVE.match(line)
    if m:
        label = _label(m["label"])
        unit = "req/s" if m["unit"].lower() == "req" else f"{label} tok/s".strip()
        name = f"{unit}" if m["unit"].lower() == "tok" else (f"{label} req/s" if label != "request" else "req/s")
        return PerfRow(shape=SHAPE, name=name, metrics={name: float(m["v"])}, source_line=lineno)
    m = _TOKS.search(line)
    if m:
        name = f"{_label(m['label'] or '')} tok/s".strip()
        return PerfRow(shape=SHAPE, name=name, metrics={name: float(m["v"])}, source_line=lineno)
    return None


def throughput_rows(path: Path) -> list[PerfRow]:
    """Every throughput line of the output at ``path``, in order; only lines holding ``/s`` right
    after ``tok``/``req`` (``tokens/s``, ``(req/s)``; not tqdm's ``it/s``) are read (found with
    ``mmap.find``, in C)."""
    rows: list[PerfRow] = []
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return rows  # the parser itself names a missing or unreadable output
        fh = open(path, "rb")
    except OSError:
        return rows
    with fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        lineno, counted, hit = 1, 0, data.find(b"/s")
        while hit >= 0:
            unit = data[max(0, hit - 8) : hit].lower()  # ``requests/s``, ``tokens/s``, ``(req/s)``, ``tok/s``
            if b"tok" not in unit and b"req" not in unit:
                hit = data.find(b"/s", hit + 2)
                continue
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            end = len(data) if end < 0 else end
            lineno += data[counted:start].count(b"\n")
            counted = start
            row = read_line(lineno, data[start:end].decode("utf-8", "replace").rstrip("\r"))
            if row is not None:
                rows.append(row)
            hit = data.find(b"/s", end)
    return rows
