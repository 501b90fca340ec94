"""The replay corpus (tests/data/printouts/): real console outputs with the verdict each proves and
the perf figures it printed, read back as an artifact's raw output would be."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pytest_gpuverify.config.targets import PYTEST_KINDS
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

CORPUS = Path(__file__).resolve().parents[1] / "data" / "printouts"
HEADER = re.compile(rb"^# (?:SOURCE|WHAT|NOTE|CMD):")
_FIGURE = re.compile(r"^\s*(?P<v>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>.*)$")
_TO_US = {"us": 1.0, "µs": 1.0, "usec": 1.0, "ms": 1e3, "msec": 1e3, "ns": 1e-3, "s": 1e6, "sec": 1e6}


@dataclass
class Case:
    file: str
    kind: str
    verdict: str
    why: str
    exit_code: int = 0
    exit_status_is_check: bool = False
    figures: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return CORPUS / self.file


def cases() -> list[Case]:
    found = []
    for manifest in sorted(CORPUS.glob("cases*.toml")):
        for entry in tomllib.loads(manifest.read_text())["case"]:
            found.append(Case(**{k: v for k, v in entry.items() if k in Case.__dataclass_fields__}))
    return found


def output_of(case: Case) -> bytes:
    """The output as published: the file less its header lines."""
    lines = case.path.read_bytes().split(b"\n")
    at = 0
    while at < len(lines) and HEADER.match(lines[at]):
        at += 1
    return b"\n".join(lines[at:])


def replay(case: Case, tmp: Path) -> tuple[str, list[str], ParsedOutput]:
    raw = tmp / case.file
    raw.write_bytes(output_of(case))
    context = ParseContext(exit_code=case.exit_code, exit_status_is_check=case.exit_status_is_check)
    parsed = parse_output(case.kind, raw, context)
    target = TargetRecord(name=case.file, kind=case.kind, exit_status_is_check=case.exit_status_is_check)
    verdict, reasons = verdict_and_reasons(RunRecord(ran=True, exit_code=case.exit_code), parsed, None, target)
    return verdict, reasons, parsed


def values(parsed: ParsedOutput) -> list[float]:
    """Every number the perf rows hold (their times, in µs, and their metrics)."""
    found: list[float] = []
    for row in parsed.perf:
        found += [v for v in (row.us_median, row.min_us, row.max_us) if v is not None]
        found += [v for v in row.metrics.values() if v is not None]
    return found


def figure_found(figure: str, held: list[float]) -> bool:
    """A printed figure (``1.23 ms``) is in the rows: its value, or as µs where its unit is a time's."""
    match = _FIGURE.match(figure)
    if match is None:
        return False
    value = float(match["v"])
    unit = match["unit"].strip().lower()
    wanted = [value] + ([value * _TO_US[unit]] if unit in _TO_US else [])
    return any(math.isclose(v, w, rel_tol=1e-6, abs_tol=1e-12) for v in held for w in wanted)


def is_pytest_kind(case: Case) -> bool:
    return case.kind in PYTEST_KINDS


__all__ = ["Case", "cases", "figure_found", "replay", "values", "Optional"]
