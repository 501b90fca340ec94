"""``gpuverify handoff TICKET_DIR [--base BASE_DIR] [-o FILE]``: the ticket's handoff JSON, every number
taken from the ticket's artifacts, each ``gpuverify check``ed first (a failing check refuses, naming the
file). What a person must write (``whatWasImplemented``, ``tests.added`` ...) is left empty."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.common.words import counted
from pytest_gpuverify.compare.command import Refused, checked, decide, not_passing
from pytest_gpuverify.compare.core import side_of
from pytest_gpuverify.engine.orphans import unclaimed_logs
from pytest_gpuverify.parsers.recognizers.perf_lines import SHAPE
from pytest_gpuverify.records.artifact import Artifact


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CommandRun(_Model):
    command: str
    exitCode: int | None = None
    observation: str


class Verification(_Model):
    commandsRun: list[CommandRun] = Field(default_factory=list)
    interactiveChecks: list[Any] = Field(default_factory=list)


class TestCase(_Model):
    name: str
    verifies: str


class TestFile(_Model):
    file: str
    cases: list[TestCase] = Field(default_factory=list)


class Tests(_Model):
    added: list[TestFile] = Field(default_factory=list)


class Handoff(_Model):
    """The handoff's shape: what a reviewer's tools read."""

    salientSummary: str
    whatWasImplemented: str = ""
    whatWasLeftUndone: str = ""
    verification: Verification = Field(default_factory=Verification)
    tests: Tests = Field(default_factory=Tests)
    discoveredIssues: list[Any] = Field(default_factory=list)


def handoff_schema() -> dict[str, Any]:
    return Handoff.model_json_schema()


def ticket_artifacts(folder: Path) -> list[tuple[Path, Artifact]]:
    """Each current artifact of the folder (``bench_<topic>.json``; kept older copies are not), checked."""
    out = []
    for path in sorted(folder.glob("bench_*.json")):
        art = checked(str(path))
        if path.name == f"bench_{art.topic}.json":
            out.append((path, art))
    return out


def _ab(base: Artifact | None, head: Artifact) -> str | None:
    if base is None and not any(side_of(r.side) for r in head.perf):
        return None
    sides = [("the base", base), ("the head", head)] if base is not None else [("the A/B run", head)]
    bad = [why for why in (not_passing(label, art) for label, art in sides) if why]
    if bad:
        return f"A/B: not compared ({'; '.join(bad)})"
    try:
        pairs = decide(base, head).pairs if base is not None else decide(head, None).pairs
    except Refused as exc:
        return f"A/B: not compared ({exc})"
    if not pairs:
        return None
    calls = Counter(p.call for p in pairs)
    ratios = ", ".join(f"{p.shape} {p.metric} {p.base_mean!r} -> {p.head_mean!r} ({p.call})" for p in pairs[:6])
    more = f", and {len(pairs) - 6} more" if len(pairs) > 6 else ""
    return "A/B: " + ", ".join(f"{n} {c}" for c, n in sorted(calls.items())) + f" ({ratios}{more})"


def observation(art: Artifact, base: Artifact | None = None) -> str:
    c = art.correctness
    parts = [
        art.verdict + (f" ({art.reasons[0]})" if art.reasons and art.verdict != "PASS" else ""),
        f"{counted(c.shapes_checked, 'shape')} checked",
    ]
    for label, value in (
        ("lowest cosine_sim", c.cosine_sim),
        ("lowest SNR (dB)", c.snr_db),
        ("max_abs_error", c.max_abs_error),
    ):
        if value is not None:
            parts.append(f"{label} {value!r}")
    tput = [f"{k} {v!r}" for r in art.perf if r.shape == SHAPE for k, v in r.metrics.items() if v is not None]
    if tput:
        parts.append("throughput: " + ", ".join(tput))
    ab = _ab(base, art)
    if ab:
        parts.append(ab)
    return "; ".join(parts)


def build_runs(arts: list[Artifact]) -> list[CommandRun]:
    """Each build the artifacts stood on, once per side (each side's build has its own kept output
    file, which the artifacts that stood on it share), before the targets."""
    seen: dict[str, tuple[Any, list[str]]] = {}
    for art in arts:
        for b in art.builds:
            seen.setdefault(b.output or f"{b.name}:{b.command}", (b, []))[1].append(art.topic)
    runs = []
    for b, topics in seen.values():
        result = b.failed or f"build {b.name} passed"
        output = f"output {b.output} ({b.output_bytes} bytes, sha256 {b.output_sha256})" if b.output else "no output"
        gpus = f" on GPU {','.join(map(str, b.gpus))}" if b.gpus else ""
        side = {"A": "side A (base) ", "B": "side B (head) "}.get(b.side or "", "")
        runs.append(
            CommandRun(
                command=b.command,
                exitCode=b.exit_code,
                observation=(
                    f"{side}{result}; in {b.container or 'the host'}{gpus}, {b.duration_s} s; {output}; "
                    f"targets: {', '.join(topics)}"
                ),
            )
        )
    return runs


def build_handoff(ticket: Path, base: Path | None = None) -> Handoff:
    """Refused (naming the file) when any artifact fails ``gpuverify check``."""
    arts = ticket_artifacts(ticket)
    bases = {a.topic: a for _, a in ticket_artifacts(base)} if base is not None else {}
    runs = build_runs([a for _, a in arts]) + [
        CommandRun(command=a.command or a.topic, exitCode=a.exit_code, observation=observation(a, bases.get(a.topic)))
        for _, a in arts
    ]
    verdicts = Counter(a.verdict for _, a in arts)
    summary = f"{len(arts)} artifact(s) in {ticket.resolve().name}: " + ", ".join(
        f"{verdicts[v]} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE") if verdicts[v]
    )
    orphans = [f"{log.log.name}: {log.says()}" for log in unclaimed_logs(ticket)]
    return Handoff(salientSummary=summary, verification=Verification(commandsRun=runs), discoveredIssues=orphans)


def run_handoff(ticket: str, base: str | None, out: str | None) -> int:
    from pytest_gpuverify.verify.exclusivity import artifact_paths

    folder = Path(ticket)
    if not folder.is_dir():
        print(f"gpuverify handoff: {ticket}: no such folder", file=sys.stderr)
        return 2
    if not artifact_paths([ticket]):  # as `gpuverify check` of a folder without artifacts
        print(f"gpuverify handoff: no artifact (bench_*.json) in {ticket}", file=sys.stderr)
        return 2
    try:
        doc = build_handoff(folder, Path(base) if base else None)
    except Refused as exc:
        print(f"gpuverify handoff: refused: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(doc.model_dump(), indent=2) + "\n"
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
