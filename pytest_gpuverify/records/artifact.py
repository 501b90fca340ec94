"""The artifact: typed models, atomic writing, and the JSON Schema `gpuverify schema` prints.

Field names are those of the documented artifact format (docs/artifacts.md). Unknown values are ``None`` (JSON ``null``), never
invented; NaN never reaches the JSON (it is counted in ``nan_count`` and stored as ``null``).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_gpuverify.records.builds import BuildRecord, FreshContainerRecord
from pytest_gpuverify.common.files import RESULT_MODE, write_atomic
from pytest_gpuverify.records.machine import MachineRecord
from pytest_gpuverify.records.scheduling import SchedulerRecord, ShardRecord

SCHEMA_VERSION = 5  # 2: the run record (`run`); 3: host_gpus, signed_by, target.command, the raw log's trailer,
# the run's timeline (`timeline`); 4 and 5: see schemas.py (_V4, _V5)

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
NO_GPU = "NO_GPU"


class _Model(BaseModel):
    # Every model of the plugin builds its validator at first use (defer_build), not at import: a
    # session builds only those it uses, and the artifact's after its first command has started
    # (parsers/reader.warm, remote/collect.warm), not on the way to it.
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class GpuRecord(_Model):
    """The GPU the command saw. ``hip_index`` on ROCm, ``index`` on every backend."""

    index: Optional[int] = None
    hip_index: Optional[int] = None
    arch: Optional[str] = None
    name: Optional[str] = None
    uuid: Optional[str] = None
    lock_path: Optional[str] = None


class Versions(_Model):
    rocm: Optional[str] = None
    torch: Optional[str] = None
    hip: Optional[str] = None
    cuda: Optional[str] = None
    triton: Optional[str] = None
    python: Optional[str] = None


class RepoRecord(_Model):
    path: str
    sha: Optional[str] = None
    dirty: Optional[bool] = None
    dirty_paths: list[str] = Field(default_factory=list)
    # the state the command ran on: "before any command" (read once, before anything of ours ran) or "after
    # the builds" (read again once the declared builds ran); the tracked files they changed
    state: Optional[str] = None
    changed_by_builds: list[str] = Field(default_factory=list)


class Correctness(_Model):
    """What the output says about correctness. ``passed`` is None when nothing readable was printed."""

    passed: Optional[bool] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    nan_count: int = 0
    snr_db: Optional[float] = None
    shapes_checked: int = 0
    checks_passed: int = 0
    checks_warning: int = 0
    checks_failed: int = 0
    cosine_sim: Optional[float] = None
    max_abs_error: Optional[float] = None
    logits_diff: Optional[float] = None
    err_ratio: Optional[float] = None  # the largest ``err`` (mismatch ratio) a table printed
    # The output dtype the SNR rule was applied to (a low-precision one when any source names one),
    # and where it was read: "declaration", "command: -d fp8", "output line 12: column 'dtype'"
    dtype: Optional[str] = None
    dtype_source: Optional[str] = None

    _finite = field_validator("rtol", "atol", "snr_db", "cosine_sim", "max_abs_error", "logits_diff", "err_ratio",
                              mode="before")(
        _finite_or_none
    )


class PerfRow(_Model):
    """One measured quantity. ``stat`` names the statistic printed (aiter's ``avg`` is ``mean``; null
    when the output does not say); ``us_median`` holds the time in microseconds only for a median or
    an unnamed statistic, ``min_us``/``max_us``/``runs`` the row's min, max and count, and ``metrics``
    its other figures (``mean_us``, ``p99_us``, TFLOPS ...); see parsers/perfstats.py."""

    shape: str
    name: str
    us_median: Optional[float] = None
    stat: Optional[str] = None
    runs: Optional[int] = None
    min_us: Optional[float] = None
    max_us: Optional[float] = None
    regime: Optional[str] = None
    side: Optional[str] = None
    run: Optional[int] = None  # which of the target's repeated runs printed it (1..N; runs_log.py)
    # the title of the printed table the row belongs to (a Triton perf_report's "matmul-performance-fp16:"):
    # part of the row's identity, so rows of two tables never share a key; None where none was printed
    table: Optional[str] = None
    metrics: dict[str, Optional[float]] = Field(default_factory=dict)
    source_line: Optional[int] = None

    _finite = field_validator("us_median", "min_us", "max_us", mode="before")(_finite_or_none)

    @field_validator("metrics", mode="before")
    @classmethod
    def _finite_metrics(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _finite_or_none(v) for k, v in value.items()}
        return value


class TargetRecord(_Model):
    """What was asked for: the target as collected or declared."""

    name: str
    kind: str
    path: Optional[str] = None
    args: list[str] = Field(default_factory=list)
    dtype: Optional[str] = None
    regime: Optional[str] = None
    thresholds: dict[str, float] = Field(default_factory=dict)
    floors: dict[str, float] = Field(default_factory=dict)  # declared minimums of printed metrics (floors.py)
    ceilings: dict[str, float] = Field(default_factory=dict)  # ... and maximums of printed times
    pass_pattern: Optional[str] = None  # declared regular expressions for the harness's own words
    fail_pattern: Optional[str] = None
    verdict_lines_off: list[str] = Field(default_factory=list)  # default verdict lines turned off (printout.py)
    exit_status_is_check: bool = False  # the command's exit status is its check: exit 0 is one checked shape
    command: Optional[list[str]] = None  # a declared bench command, before its args
    repeats: Optional[int] = None  # runs asked for per side (declaration or --gpu-repeats); None: one
    min_steps: Optional[int] = None  # the fewest steps a run must print that it timed (runs_log.py)
    packages: Optional[list[str]] = None  # declared import packages under test (None: the default rule)
    env: dict[str, str] = Field(default_factory=dict)  # declared variables for its command
    # declared: metric or row name -> "higher"/"lower", which way is better (parsers/figures.py)
    directions: dict[str, str] = Field(default_factory=dict)


class RunRecord(_Model):
    """What happened around the command, as the verdict saw it: with the raw output and the target's
    dtype, kind and thresholds, ``gpuverify check`` re-derives the verdict and its reasons from it.
    Nothing here is read from the output."""

    blocked: list[str] = Field(default_factory=list)  # why the command was never started
    ran: bool = False
    exit_code: Optional[int] = None
    timed_out: bool = False
    interrupted: Optional[str] = None  # "KeyboardInterrupt", "SIGTERM" ...
    container_died: bool = False
    output_problems: list[str] = Field(default_factory=list)  # stream errors, truncation
    unknowns: list[str] = Field(default_factory=list)  # facts recorded as null (a version), with why
    # "PID COMMAND" of each process the run left running after the command ended; each was stopped
    # (SIGTERM, then SIGKILL) before the GPU's lock was released
    leftovers: list[str] = Field(default_factory=list)
    # the engine read the raw output into correctness and perf; not after an interrupt or an internal
    # error, and then the verdict stood on these facts alone
    output_parsed: bool = False
    # a compute process of someone else on a held GPU while the command ran (GpuWatch.foreign), one reason each
    shared: list[str] = Field(default_factory=list)
    # a package under test the command took from outside its worktree (ImportOrigin), one reason each
    imports_outside: list[str] = Field(default_factory=list)


class Timeline(_Model):
    """When the run held its GPUs and ran its command: UTC wall times, each derived from the session's
    one reading of both clocks and a monotonic reading (so they are ordered and immune to clock steps).
    The recorded command interval covers the real one and the recorded hold lies inside the real one
    (``lock_taken`` read after the lock is taken, ``lock_released`` before it is let go):
    ``lock_taken <= command_started <= command_ended <= lock_released``. ``gpuverify check`` over several artifacts of one host reports
    any two whose lock intervals on one GPU overlap."""

    collected: Optional[str] = None  # the session had its targets (pytest's collection was over)
    pick_started: Optional[str] = None  # the run asked for its GPUs
    lock_taken: Optional[str] = None  # the last of its GPU locks was taken
    command_started: Optional[str] = None
    command_ended: Optional[str] = None
    lock_released: Optional[str] = None  # the first of its GPU locks was let go (null: a fixture's grant)


class ClockReading(_Model):
    """One reading of a GPU's clocks and limits. ``throttle``: the active clock-limiting reasons by name
    (NVML's ``sw_power_cap``, ``hw_slowdown``, ``sw_thermal``, ``hw_thermal``, ``hw_power_brake``... and
    ``gpu_idle``); empty when none, and when the backend gives none (see ``GpuWatch.problems``)."""

    sm_mhz: Optional[float] = None
    mem_mhz: Optional[float] = None
    temp_c: Optional[float] = None
    power_w: Optional[float] = None
    throttle: list[str] = Field(default_factory=list)


class GpuClocks(_Model):
    """One held GPU's clocks over a run: at the command's start and end, and their extremes over the watch.
    The clock events seen (``throttle_seen``) in their two classes (records/clock_events.py):
    ``unlike_events`` make like runs unlike (thermal, hardware slowdown, power brake, sync boost, any
    unknown one) and ``throttled`` says one was seen; ``normal_events`` are the normal operating state
    (idle, the power cap, clocks an administrator set). Both None in artifacts written before the classes
    were kept, whose ``throttled`` said: a slowing reason, the power cap included, held the SM clock below
    75% of its maximum."""

    index: int
    start: Optional[ClockReading] = None
    end: Optional[ClockReading] = None
    sm_mhz_min: Optional[float] = None
    sm_mhz_max: Optional[float] = None
    mem_mhz_min: Optional[float] = None
    mem_mhz_max: Optional[float] = None
    temp_c_max: Optional[float] = None
    power_w_max: Optional[float] = None
    throttle_seen: list[str] = Field(default_factory=list)
    sm_mhz_rated: Optional[float] = None  # the GPU's maximum SM clock, where the driver gives it
    throttled: bool = False
    unlike_events: Optional[list[str]] = None
    normal_events: Optional[list[str]] = None


class ForeignProcess(_Model):
    """A compute process on a held GPU that is not the run's own (not the command's process tree, not its
    container's processes), seen while the command ran."""

    gpu: int
    pid: int
    name: Optional[str] = None
    user: Optional[str] = None
    vram_mib: Optional[float] = None
    first_seen: str
    last_seen: str


class GpuWatch(_Model):
    """The held GPUs watched while one run's command ran (one record per run of a repeated target)."""

    run: Optional[int] = None  # 1..N of a repeated target (RunSlice.run); None for a single run
    side: Optional[str] = None  # "A"/"B" in an A/B run
    backend: Optional[str] = None  # how it read: "nvml", "amdsmi", "rocm-smi", "amd-smi"
    interval_s: Optional[float] = None
    samples: int = 0
    foreign: list[ForeignProcess] = Field(default_factory=list)
    clocks: list[GpuClocks] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)  # what could not be read, and why


class SyncRecord(_Model):
    """--gpu-sync: the local checkout copied to the GPU host before the run (remote/sync.py)."""

    local_path: str
    repo: str
    host_path: str
    local_sha: Optional[str] = None
    dirty: bool = False
    dirty_paths: list[str] = Field(default_factory=list)
    files: int = 0
    files_sha256: str = ""
    ignored_copied: list[str] = Field(default_factory=list)  # gitignored files copied because the run named them
    removed: list[str] = Field(default_factory=list)  # files deleted in the host's checkout: the local one has them no more
    replaced: list[str] = Field(default_factory=list)  # the host's own changes replaced (--gpu-sync-overwrite)


class RunSlice(_Model):
    """One of a target's repeated runs (``repeats``, ``--gpu-ab``): its part of the one raw log lies
    between the engine's begin and end lines, which say the same (runs_log.py)."""

    run: int  # 1..N within its side
    side: Optional[str] = None  # "A" (base) / "B" (head) in an A/B run
    checkout: Optional[str] = None  # the sha it ran
    exit_code: Optional[int] = None
    timed_out: bool = False
    interrupted: Optional[str] = None
    container_died: bool = False
    junit_xml: Optional[str] = None  # an inner pytest run's report of this run


class PerfSummary(_Model):
    """One printed quantity over a target's runs (per side): the median of the runs, min and max."""

    shape: str
    name: str
    stat: Optional[str] = None
    side: Optional[str] = None
    metric: str  # "us" for the row's own time, else a metric key
    runs: int
    median: float
    min: float
    max: float


class AutotuneChoice(_Model):
    """One choice of Triton's autotuner: the function it tuned, the configuration it selected (its
    meta-parameters and ``num_warps``/``num_stages``/... as Triton names them), the tuning key where
    Triton says it, how long tuning took, and where it was read: ``output`` (the ``TRITON_PRINT_AUTOTUNING``
    printout, at raw log ``line``) or ``cache`` (the run's Triton cache after it ended, its ``file``)."""

    function: str
    config: dict[str, Optional[Union[bool, int, float, str]]] = Field(default_factory=dict)
    key: Optional[str] = None
    seconds: Optional[float] = None
    source: str = "output"
    line: Optional[int] = None
    file: Optional[str] = None
    run: Optional[int] = None  # 1..N of a repeated target; 0: an A/B side's unmeasured warm-up run
    side: Optional[str] = None


class AutotuneRecord(_Model):
    """What Triton's autotuner chose in the run (parsers/recognizers/triton_autotune.py, place/autotune_cache.py);
    ``unknown``: why no choice could be read, where none was; ``differ``: under --gpu-ab, the functions
    (and keys) whose chosen configuration differs between the sides."""

    choices: list[AutotuneChoice] = Field(default_factory=list)
    unknown: Optional[str] = None
    differ: list[str] = Field(default_factory=list)


class AbRecord(_Model):
    """``--gpu-ab BASE``: side A is BASE, checked out as a git worktree for the run and removed after;
    side B is the checkout the run started from."""

    base_ref: str
    base_sha: Optional[str] = None
    head_sha: Optional[str] = None
    base_worktree: Optional[str] = None  # on the host
    base_cache_dirs: dict[str, str] = Field(default_factory=dict)
    order: list[str] = Field(default_factory=list)  # "A1", "B1", "A2" ... as run
    # the sides' compile caches (--gpu-ab-cache): "cold" (each measured run starts from empty ones) or
    # "warm" (each side's own, filled by one unmeasured warm-up run on its own commit, in ``warmups``)
    cache_state: Optional[str] = None
    warmups: list[RunSlice] = Field(default_factory=list)


class ImportOrigin(_Model):
    """Where one package under test came from: predicted before the run with the command's own import
    rules (its working folder, script folder, pytest's rootdir and ini ``pythonpath``, its PYTHONPATH),
    and observed inside the run (the file each of its Python processes imported it from)."""

    predicted: Optional[str] = None  # None: not importable by those rules
    predicted_path: list[str] = Field(default_factory=list)  # the folders the command puts before PYTHONPATH
    seen: Literal["imported", "not imported", "not recorded"] = "not recorded"
    observed: Optional[str] = None  # the file it was imported from (the first process's, when they differ)
    also_observed: list[str] = Field(default_factory=list)  # other files other processes imported it from
    processes: int = 0  # the command's Python processes that recorded their imports
    why_not_recorded: Optional[str] = None
    checkout: Optional[str] = None  # the worktree's own copy of the package, where it has one


class Artifact(_Model):
    schema_version: int = SCHEMA_VERSION
    plugin_version: Optional[str] = None
    key: Optional[str] = None
    topic: str
    ts: str
    finished_ts: Optional[str] = None
    duration_s: Optional[float] = None
    host: Optional[str] = None
    container: Optional[str] = None
    image: Optional[str] = None
    gpu: GpuRecord = Field(default_factory=GpuRecord)
    gpus: list[GpuRecord] = Field(default_factory=list)
    host_gpus: Optional[int] = None  # how many GPUs the host has: every index lies below it
    versions: Versions = Field(default_factory=Versions)
    repos: list[RepoRecord] = Field(default_factory=list)
    target: Optional[TargetRecord] = None
    command: Optional[str] = None
    workdir: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)
    imports: dict[str, Optional[str]] = Field(default_factory=dict)  # the origin the verdict took: observed, else predicted
    import_origins: dict[str, ImportOrigin] = Field(default_factory=dict)  # by package, both origins
    cold: bool = False
    cache_dirs: dict[str, str] = Field(default_factory=dict)
    cache_reused: Optional[bool] = None  # warm caches held builds before the run; None when cold
    correctness: Correctness = Field(default_factory=Correctness)
    perf: list[PerfRow] = Field(default_factory=list)
    verdict: Verdict = "INCONCLUSIVE"
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    exit_code: Optional[int] = None
    timed_out: bool = False
    run: Optional[RunRecord] = None  # None in artifacts written before the record was kept
    raw_output: Optional[str] = None
    raw_output_sha256: Optional[str] = None
    raw_output_bytes: Optional[int] = None
    junit_xml: Optional[str] = None  # an inner pytest run's report, saved beside the raw output
    signed_by: Optional[str] = None  # the Signing row's signer: the identity its .sig files verify as
    timeline: Optional[Timeline] = None  # None in artifacts written before it was kept
    image_digest: Optional[str] = None  # the image the container ran, by content (repo digest, else image id)
    fresh_container: Optional[FreshContainerRecord] = None  # a `run` row's container, started for this run
    builds: list[BuildRecord] = Field(default_factory=list)  # the declaration's builds this target stood on
    synced: Optional[SyncRecord] = None  # --gpu-sync: what was copied from where (None: no copy)
    runs: list[RunSlice] = Field(default_factory=list)  # repeated runs, in the order they ran; [] for one
    perf_summary: list[PerfSummary] = Field(default_factory=list)  # from ``perf`` (summary.py)
    ab: Optional[AbRecord] = None
    watch: list[GpuWatch] = Field(default_factory=list)  # the held GPUs while each command ran
    shard: Optional[ShardRecord] = None  # --gpu-shard: the part of a split run it ran in (config/shards.py)
    scheduler: Optional[SchedulerRecord] = None  # GPUs granted outside the plugin (lease/grants.py)
    machine: Optional[MachineRecord] = None  # which machine, exactly (records/machine.py); None: not read
    autotune: Optional[AutotuneRecord] = None  # Triton's autotuner's choices (None: not a kind Triton runs in)


def artifact_schema() -> dict[str, Any]:
    return Artifact.model_json_schema()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def dump_artifact(artifact: Artifact) -> bytes:
    payload = artifact.model_dump(mode="json")
    return (json.dumps(payload, indent=2, allow_nan=False, ensure_ascii=False) + "\n").encode("utf-8")


def write_artifact(artifact: Artifact, path: Path) -> None:
    write_atomic(path, dump_artifact(artifact), mode=RESULT_MODE)


def read_artifact(path: Path) -> Artifact:
    return Artifact.model_validate_json(Path(path).read_bytes())


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
