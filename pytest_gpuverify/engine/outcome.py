"""The end of one target's run: its outcome (artifact, raw log, JUnit report) and the steps that turn
the run's facts and the parse into the artifact's verdict, run record and output hashes. Plain
functions: the session calls them once a command has ended, or when a target ends another way."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pytest_gpuverify.engine.artifact import Artifact, GpuRecord, TargetRecord, sha256_file, utc_now
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.place.provenance import move_out
from pytest_gpuverify.config.targets import junit_path
from pytest_gpuverify.execute.log_trailer import seal_log
from pytest_gpuverify.engine.summary import summarize
from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.engine.verdict import RunFacts, verdict_and_reasons


@dataclass
class TargetOutcome:
    target: Target
    artifact: Artifact
    artifact_path: Path
    raw_path: Optional[Path] = None
    junit_path: Optional[Path] = None
    written: bool = False
    sealed: bool = False  # the raw log has its trailer


def target_record(target: Target, repeats: Optional[int]) -> TargetRecord:
    """The artifact's record of what was asked for: the target as declared or named."""
    return TargetRecord(
        name=target.name, kind=target.kind, path=str(target.path) if target.path else None,
        args=list(target.args), dtype=target.dtype, regime=target.regime,
        thresholds=target.thresholds.model_dump(exclude_none=True, exclude={"floors", "ceilings"}),
        floors=dict(target.thresholds.floors), ceilings=dict(target.thresholds.ceilings),
        pass_pattern=target.pass_pattern, fail_pattern=target.fail_pattern,
        command=list(target.command) if target.command else None,
        repeats=repeats, min_steps=target.min_steps,
    )


def record_exec(facts: RunFacts, result) -> None:
    """What an ended command (an ExecOutcome) tells the verdict."""
    facts.exit_code = result.exit_code
    facts.timed_out = result.timed_out
    facts.container_died = result.container_died
    facts.interrupted = result.interrupted or facts.interrupted
    facts.output_problems.extend(result.problems)
    facts.leftovers = list(result.leftovers)


def seal(outcome: TargetOutcome, facts: RunFacts) -> None:
    """The raw log's trailer, once (log_trailer.py)."""
    if not outcome.sealed and outcome.raw_path is not None:
        seal_log(outcome.raw_path, facts, outcome.artifact)
        outcome.sealed = True


def finish(outcome: TargetOutcome, facts: RunFacts, parsed, t0: float) -> None:
    """The artifact's verdict, reasons, run record and output hashes, from the facts and the parse."""
    art = outcome.artifact
    if parsed is not None:
        art.correctness = parsed.correctness
        regime = outcome.target.regime
        art.perf = [r if r.regime or not regime else r.model_copy(update={"regime": regime}) for r in parsed.perf]
        art.perf_summary = summarize(art.perf)
        art.notes.extend(parsed.notes)
    art.verdict, art.reasons = verdict_and_reasons(facts, parsed, outcome.target.thresholds)
    # the facts behind the verdict, so that `gpuverify check` can re-derive it
    art.run = facts.to_record(output_parsed=parsed is not None)
    art.exit_code, art.timed_out = facts.exit_code, facts.timed_out
    if facts.ran and outcome.raw_path is not None and outcome.raw_path.exists():
        seal(outcome, facts)
    art.finished_ts = utc_now()
    art.duration_s = round(time.monotonic() - t0, 3)
    if outcome.raw_path is not None and outcome.raw_path.exists():
        art.raw_output_sha256 = sha256_file(outcome.raw_path)
        art.raw_output_bytes = outcome.raw_path.stat().st_size


def gpu_records(infos: list[GpuInfo], grant, vendor: str, arch: Optional[str]) -> list[GpuRecord]:
    """The artifact's record of each locked GPU (``grant``: a picker.GpuGrant), its lock file beside it."""
    return [GpuRecord(index=i.index, hip_index=i.index if vendor == "rocm" else None, arch=i.arch or arch,
                      name=i.name, uuid=i.uuid, lock_path=str(lease.path)) for i, lease in zip(infos, grant.leases)]


def fetch_junit(handle, run_id: str, art: Artifact, dest: Path) -> Optional[Path]:
    """The inner pytest's JUnit report: saved at ``dest`` beside the raw output, removed from the container."""
    path, note = move_out(handle, junit_path(run_id), dest)
    if note:
        art.notes.append(note)
    art.junit_xml = path.name if path else None
    return path
