"""The typed result of each phase of one target's run (engine/run.py runs them, in this order):

    Begun     what the target asked for, before anything ran (topic, stamp, the target's record)
    Placed    place:   its worktree, the repo's state, where the command runs (container or host)
    Leased    lease:   its GPUs, locked (before the check for a `run` row, whose container gets them)
    Fresh     a `run` row's container, started with the locked GPUs (ephemeral.py)
    Checked   check:   the place (arch, versions), the declared builds, the imports, the runs' plan
    Executed  execute: the command (or its planned runs) on the GPUs, and what it ended with
    Decided   parse + decide: the parse of the raw log, the run record and the verdict

``Command`` is not a result: it is what the execute phase runs (one command, or the plan's runs of
it, multirun.py). Each phase fills only its own result; none touches the artifact. outcome.build_artifact makes the
artifact from them once the run is over, whichever phases ran (a blocked target stops after the
phase that blocked it, with the reason in that phase's ``blocked``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pytest_gpuverify.records.artifact import (
    AbRecord,
    GpuRecord,
    GpuWatch,
    KernelRecord,
    ProfileRecord,
    RepoRecord,
    RunRecord,
    RunSlice,
    SyncRecord,
    TargetRecord,
    Verdict,
)

if TYPE_CHECKING:
    from pytest_gpuverify.config.targets import RunEnvironment, Target
    from pytest_gpuverify.engine.imports_seen import ImportProbe, ImportsSeen
    from pytest_gpuverify.execute.base import Executor, Place
    from pytest_gpuverify.lease.picker import GpuGrant
    from pytest_gpuverify.parsers.result import ParsedOutput
    from pytest_gpuverify.place.ab import BaseWorktree
    from pytest_gpuverify.place.container_checks import ContainerCheck
    from pytest_gpuverify.place.packages import UnderTest
    from pytest_gpuverify.place.resolve import Resolution
    from pytest_gpuverify.place.workspace import Workspace
    from pytest_gpuverify.records.builds import BuildRecord, FreshContainerRecord
    from pytest_gpuverify.records.machine import MachineRecord
    from pytest_gpuverify.records.scheduling import SchedulerRecord, ShardRecord


@dataclass
class Begun:
    target: Target
    record: TargetRecord  # the artifact's `target`
    topic: str
    stamp: str  # names the run's files: bench_<topic>.<stamp>.log
    ts: str
    t0: float  # monotonic: the artifact's duration_s
    host: str
    artifact_path: Path
    notes: list[str] = field(default_factory=list)  # the session's, for every target
    key: str | None = None  # --ticket
    cold: bool = False
    signed_by: str | None = None
    synced: SyncRecord | None = None
    collected: str | None = None  # the session had its targets: the timeline's first entry
    shard: ShardRecord | None = None  # the session's shard of a split run (config/shards.py)
    scheduler: SchedulerRecord | None = None  # GPUs granted outside the plugin (lease/grants.py)
    machine: MachineRecord | None = None  # the machine's identity (place/machine.py)


@dataclass
class Placed:
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ws: Workspace | None = None
    repo: RepoRecord | None = None  # read once per worktree, before any command of ours ran in it
    where: Place | None = None  # a container, or the host itself (--gpu-container none)
    container: str | None = None  # the artifact's `container` (None on the host)
    wt: str | None = None  # the worktree as the command sees it
    fresh: Resolution | None = None  # a `run` row: its container starts once the GPUs are locked


@dataclass
class Leased:
    blocked: list[str] = field(default_factory=list)
    grant: GpuGrant | None = None
    owned: bool = False  # taken for this run, so let go of by it (a fixture's grant is the caller's)
    pick_started: str | None = None
    lock_taken: str | None = None
    lock_released: str | None = None


@dataclass
class Fresh:
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: FreshContainerRecord | None = None


@dataclass
class Plan:
    repeats: int
    base: BaseWorktree | None = None
    base_wt: str | None = None  # the base worktree in the container
    head_sha: str | None = None
    inherited_pythonpath: str = ""  # the place's own PYTHONPATH, after the base worktree's
    cache_state: str | None = None  # --gpu-ab's sides' caches: "cold" or "warm" (multirun.ab_cache_state)


@dataclass
class Checked:
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    place: ContainerCheck | None = None
    workdir: str = ""  # set by the check phase, before anything reads it
    builds: list[BuildRecord] = field(default_factory=list)
    imports: dict[str, str | None] = field(default_factory=dict)  # predicted (place/import_rules.py)
    under: UnderTest | None = None  # the packages under test, and the folders the command puts first:
    front: list[str] = field(default_factory=list)  # with the worktree's own copy of each, for the run's record
    checkout: dict[str, str | None] = field(default_factory=dict)
    probe: ImportProbe | None = None  # the run's own record of its imports, to be (imports_seen.py)
    plan: Plan | None = None  # repeats or --gpu-ab (multirun.py); None: one run
    changed_by_builds: list[str] = field(default_factory=list)  # tracked files the builds rewrote (prerun.py)
    base_changed_by_builds: list[str] = field(default_factory=list)  # ... of --gpu-ab's base worktree
    ab: AbRecord | None = None


@dataclass
class Executed:
    notes: list[str] = field(default_factory=list)
    ran: bool = False  # the command was started
    gpus: list[GpuRecord] = field(default_factory=list)
    host_gpus: int | None = None
    cache_reused: bool | None = None
    cache_dirs: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    raw_path: Path | None = None
    command_started: str | None = None
    command_ended: str | None = None
    runs: list[RunSlice] = field(default_factory=list)  # the planned runs, as they ended
    base_cache_dirs: dict[str, str] = field(default_factory=dict)  # --gpu-ab: side A's
    junit_path: Path | None = None
    watch: list[GpuWatch] = field(default_factory=list)  # the held GPUs while each command ran
    imports_seen: ImportsSeen | None = None  # the run's own record of its imports, settled (imports_seen.py)
    warmups: list[RunSlice] = field(default_factory=list)  # --gpu-ab-cache warm: each side's unmeasured run 0
    autotune_reads: list = field(default_factory=list)  # (run, side, place.autotune_cache.CacheRead) per run read
    profiles: list[ProfileRecord] = field(default_factory=list)  # --gpu-trace / --gpu-profile (trace_run.py)
    code_objects: tuple[dict, dict] = ({}, {})  # the JIT caches' code objects by kernel name, by URI (identity.py)
    trace_doubts: list[str] = field(default_factory=list)  # the trace's rule on the parsed rows (corroborate.py)
    kernels: list[KernelRecord] = field(default_factory=list)  # what the trace run dispatched (identity.py)


@dataclass
class Decided:
    run: RunRecord
    verdict: Verdict
    reasons: list[str]
    parsed: ParsedOutput | None = None


@dataclass
class Results:
    """Every phase's result of one run; None for a phase that did not run."""

    begun: Begun
    placed: Placed | None = None
    leased: Leased | None = None
    fresh: Fresh | None = None
    checked: Checked | None = None
    executed: Executed | None = None
    decided: Decided | None = None
    notes: list[str] = field(default_factory=list)  # the run's own: an internal error's traceback


@dataclass
class Command:
    target: Target
    handle: Executor  # where it runs: a container, or the host
    argv: list[str]
    rel: PurePosixPath | None  # the target's file in its worktree
    run_id: str
    run_env: RunEnvironment
    env: dict[str, str]  # run_env's variables and the run's marker (leftovers.py)
    wt: str
    workdir: str
    raw_path: Path
    topic: str
    stamp: str
    timeout_s: float
    cold: bool
    echo: Callable[[bytes], None] | None
    on_start: Callable | None
