"""The end of one target's run (run.py): its outcome (artifact, raw log, JUnit report) and the one
builder that makes the artifact from the phases' results (phases.py), once the run is over."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gpuverify import __version__
from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.engine.autotune import autotune_record
from pytest_gpuverify.engine.phases import Decided, Results
from pytest_gpuverify.engine.summary import summarize
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.watch import shared_reasons
from pytest_gpuverify.records.artifact import (
    Artifact,
    GpuRecord,
    RepoRecord,
    RunRecord,
    TargetRecord,
    Timeline,
    sha256_file,
    utc_now,
)
from pytest_gpuverify.records.autotune import differ_note

if TYPE_CHECKING:
    from pytest_gpuverify.execute.base import ExecOutcome


@dataclass
class TargetOutcome:
    target: Target
    artifact: Artifact
    artifact_path: Path
    raw_path: Path | None = None
    junit_path: Path | None = None
    written: bool = False
    stored_path: Path | None = None  # where the artifact really is, once written (a free name, a fallback)
    test_decides: bool = False  # run for a test of one's own (kernel_container): that test judges the verdict


def target_record(target: Target, repeats: int | None) -> TargetRecord:
    """The artifact's record of what was asked for: the target as declared or named."""
    return TargetRecord(
        name=target.name,
        kind=target.kind,
        path=str(target.path) if target.path else None,
        args=list(target.args),
        dtype=target.dtype,
        regime=target.regime,
        thresholds=target.thresholds.model_dump(exclude_none=True, exclude={"floors", "ceilings"}),
        floors=dict(target.thresholds.floors),
        ceilings=dict(target.thresholds.ceilings),
        pass_pattern=target.pass_pattern,
        fail_pattern=target.fail_pattern,
        verdict_lines_off=list(target.verdict_lines_off),
        exit_status_is_check=target.exit_status_is_check,
        command=list(target.command) if target.command else None,
        repeats=repeats,
        min_steps=target.min_steps,
        packages=list(target.packages) if target.packages is not None else None,
        env=dict(target.env),
        directions=dict(target.directions),
    )


def ran_in(r: Results) -> str | None:
    """The artifact's `container`: a `run` row's fresh one, else the resolved one (None on the host)."""
    if r.fresh is not None and r.fresh.record is not None:
        return r.fresh.record.name
    return r.placed.container if r.placed is not None else None


def run_record_of(
    r: Results,
    ended: ExecOutcome | None,
    own_blocked: list[str],
    interrupted: str | None,
    ran: bool,
    output_parsed: bool,
) -> RunRecord:
    """What happened around the command, from the phases' results and its end (``ended``); the
    run's ``own_blocked`` reasons (an interrupt, an internal error): the record the verdict reads."""
    checked_place = r.checked.place if r.checked is not None else None
    blocked = [
        reason for phase in (r.placed, r.leased, r.fresh, r.checked) if phase is not None for reason in phase.blocked
    ]
    return RunRecord(
        blocked=blocked + own_blocked,
        ran=ran,
        exit_code=ended.exit_code if ended else None,
        timed_out=bool(ended and ended.timed_out),
        interrupted=(ended.interrupted if ended else None) or interrupted,
        container_died=bool(ended and ended.container_died),
        output_problems=list(ended.problems) if ended else [],
        unknowns=list(checked_place.unknowns) if checked_place is not None else [],
        leftovers=list(ended.leftovers) if ended else [],
        output_parsed=output_parsed,
        shared=shared_reasons(r.executed.watch) if r.executed is not None else [],
        imports_outside=list(r.executed.imports_seen.reasons)
        if r.executed is not None and r.executed.imports_seen
        else [],
        trace_doubts=list(r.executed.trace_doubts) if r.executed is not None else [],
    )


def timeline_of(r: Results) -> Timeline:
    """The artifact's timeline from the phases' results. The raw log's trailer holds it too (sealed
    once the GPUs are let go of, before the artifact is built), so both are made here."""
    timeline = Timeline(collected=r.begun.collected)
    if r.leased is not None:
        timeline.pick_started, timeline.lock_released = r.leased.pick_started, r.leased.lock_released
        # the hold starts when the command's run has its GPUs: a `run` row whose container did not
        # start, or whose checks failed, records only its pick and release
        timeline.lock_taken = r.leased.lock_taken if r.executed is not None else None
    if r.executed is not None:
        timeline.command_started, timeline.command_ended = r.executed.command_started, r.executed.command_ended
    return timeline


def build_artifact(r: Results) -> Artifact:
    """The artifact, from the results of the phases that ran (phases.py); the one place it is made."""
    begun, placed, fresh, checked, executed, decided = r.begun, r.placed, r.fresh, r.checked, r.executed, r.decided
    art = Artifact(
        plugin_version=__version__,
        key=begun.key,
        topic=begun.topic,
        ts=begun.ts,
        host=begun.host,
        target=begun.record,
        cold=begun.cold,
        signed_by=begun.signed_by,
        synced=begun.synced,
        container=ran_in(r),
        notes=list(begun.notes),
        timeline=timeline_of(r),
        shard=begun.shard,
        scheduler=begun.scheduler,
        machine=begun.machine,
    )
    if placed is not None:
        art.repos = [placed.repo] if placed.repo is not None else []
        art.notes.extend(placed.notes)
    if fresh is not None:
        art.fresh_container = fresh.record
        art.notes.extend(fresh.notes)
    if checked is not None:
        art.workdir, art.builds, art.imports = checked.workdir, list(checked.builds), dict(checked.imports)
        art.notes.extend(checked.notes)
        if art.repos and checked.place is not None:  # the checks ran: the command's state is known
            art.repos = [repo_after_builds(art.repos[0], checked)]
        place = checked.place
        if place is not None:
            art.image, art.image_digest = place.image, place.image_digest
            art.versions = place.versions if place.versions is not None else art.versions
        if checked.ab is not None:
            runs = executed.runs if executed is not None else []
            art.ab = checked.ab.model_copy(
                update={
                    "base_cache_dirs": dict(executed.base_cache_dirs) if executed is not None else {},
                    "order": [f"{s.side}{s.run}" for s in runs],
                    "warmups": list(executed.warmups) if executed is not None else [],
                }
            )
            if checked.ab.base_worktree:  # shared by the session's A/B targets; the artifact is written before
                art.notes.append(
                    f"base worktree {checked.ab.base_worktree} is removed after the run, at the session's end"
                )
    if fresh is not None and fresh.record is not None and checked is not None:  # the image it ran, by content
        art.image_digest = fresh.record.repo_digests[0] if fresh.record.repo_digests else fresh.record.image_id
    if executed is not None:
        art.gpus = list(executed.gpus)
        art.gpu = art.gpus[0] if art.gpus else art.gpu
        art.host_gpus, art.cache_reused = executed.host_gpus, executed.cache_reused
        art.env, art.cache_dirs, art.command = dict(executed.env), dict(executed.cache_dirs), executed.command
        art.raw_output = executed.raw_path.name if executed.raw_path is not None else None
        art.runs = list(executed.runs)
        art.watch = list(executed.watch)
        art.junit_xml = executed.junit_path.name if executed.junit_path is not None else None
        art.profiles, art.kernels = list(executed.profiles), list(executed.kernels)
        art.notes.extend(executed.notes)
        if executed.imports_seen is not None:  # the run's own record of its imports decides (imports_seen.py)
            art.imports, art.import_origins = dict(executed.imports_seen.imports), dict(executed.imports_seen.origins)
            art.notes.extend(executed.imports_seen.notes)
    if decided is not None:
        _decided(art, decided, begun.target.regime)
        if executed is not None and executed.ran:
            art.autotune = autotune_record(
                begun.target.kind,
                art.env,
                decided.parsed.autotune if decided.parsed else [],
                executed.autotune_reads,
                art.ab is not None,
            )
            art.notes += [n for n in [differ_note(art.autotune.differ if art.autotune else [])] if n]
    art.notes.extend(r.notes)
    art.finished_ts = utc_now()
    art.duration_s = round(time.monotonic() - begun.t0, 3)
    raw = executed.raw_path if executed is not None else None
    if raw is not None and raw.exists():
        art.raw_output_sha256 = sha256_file(raw)
        art.raw_output_bytes = raw.stat().st_size
    return art


def _decided(art: Artifact, decided: Decided, regime: str | None) -> None:
    parsed = decided.parsed
    if parsed is not None:
        art.correctness = parsed.correctness
        art.perf = [r if r.regime or not regime else r.model_copy(update={"regime": regime}) for r in parsed.perf]
        art.perf_summary = summarize(art.perf)
        art.notes.extend(parsed.notes)
    art.verdict, art.reasons = decided.verdict, list(decided.reasons)
    art.run = decided.run  # the facts behind the verdict, so that `gpuverify check` can re-derive it
    art.exit_code, art.timed_out = decided.run.exit_code, decided.run.timed_out


def repo_after_builds(repo: RepoRecord, checked) -> RepoRecord:
    """The repo record as the command found it: read again after the declared builds, if any ran."""
    if not checked.builds:
        return repo.model_copy(update={"state": "before any command"})
    changed = checked.changed_by_builds
    dirty_paths = repo.dirty_paths + [p for p in changed if p not in repo.dirty_paths]
    return repo.model_copy(
        update={
            "state": "after the builds",
            "changed_by_builds": list(changed),
            "dirty": bool(repo.dirty or changed),
            "dirty_paths": dirty_paths,
        }
    )


def gpu_records(infos: list[GpuInfo], grant, vendor: str, arch: str | None) -> list[GpuRecord]:
    """The artifact's record of each locked GPU (``grant``: a picker.GpuGrant), its lock file beside it."""
    return [
        GpuRecord(
            index=i.index,
            hip_index=i.index if vendor == "rocm" else None,
            arch=i.arch or arch,
            name=i.name,
            uuid=i.uuid,
            lock_path=str(lease.path),
        )
        for i, lease in zip(infos, grant.leases)
    ]
