"""The artifact: typed models, atomic writing, and the JSON Schema `gpuverify schema` prints.

Field names are those of the documented artifact format (docs/artifacts.md). Unknown values are ``None`` (JSON ``null``), never
invented; NaN never reaches the JSON (it is counted in ``nan_count`` and stored as ``null``).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_gpuverify.records.builds import BuildRecord, FreshContainerRecord
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

    index: int | None = None
    hip_index: int | None = None
    arch: str | None = None
    name: str | None = None
    uuid: str | None = None
    lock_path: str | None = None


class Versions(_Model):
    rocm: str | None = None
    torch: str | None = None
    hip: str | None = None
    cuda: str | None = None
    triton: str | None = None
    python: str | None = None


class RepoRecord(_Model):
    path: str
    sha: str | None = None
    dirty: bool | None = None
    dirty_paths: list[str] = Field(default_factory=list)
    # the state the command ran on: "before any command" (read once, before anything of ours ran) or "after
    # the builds" (read again once the declared builds ran); the tracked files they changed
    state: str | None = None
    changed_by_builds: list[str] = Field(default_factory=list)


class Correctness(_Model):
    """What the output says about correctness. ``passed`` is None when nothing readable was printed."""

    passed: bool | None = None
    rtol: float | None = None
    atol: float | None = None
    nan_count: int = 0
    snr_db: float | None = None
    shapes_checked: int = 0
    checks_passed: int = 0
    checks_warning: int = 0
    checks_failed: int = 0
    cosine_sim: float | None = None
    max_abs_error: float | None = None
    logits_diff: float | None = None
    err_ratio: float | None = None  # the largest ``err`` (mismatch ratio) a table printed
    # The output dtype the SNR rule was applied to (a low-precision one when any source names one),
    # and where it was read: "declaration", "command: -d fp8", "output line 12: column 'dtype'"
    dtype: str | None = None
    dtype_source: str | None = None

    _finite = field_validator(
        "rtol", "atol", "snr_db", "cosine_sim", "max_abs_error", "logits_diff", "err_ratio", mode="before"
    )(_finite_or_none)


class PerfRow(_Model):
    """One measured quantity. ``stat`` names the statistic printed (aiter's ``avg`` is ``mean``; null
    when the output does not say); ``us_median`` holds the time in microseconds only for a median or
    an unnamed statistic, ``min_us``/``max_us``/``runs`` the row's min, max and count, and ``metrics``
    its other figures (``mean_us``, ``p99_us``, TFLOPS ...); see parsers/perfstats.py."""

    shape: str
    name: str
    us_median: float | None = None
    stat: str | None = None
    runs: int | None = None
    min_us: float | None = None
    max_us: float | None = None
    regime: str | None = None
    side: str | None = None
    run: int | None = None  # which of the target's repeated runs printed it (1..N; runs_log.py)
    # the title of the printed table the row belongs to (a Triton perf_report's "matmul-performance-fp16:"):
    # part of the row's identity, so rows of two tables never share a key; None where none was printed
    table: str | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict)
    source_line: int | None = None

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
    path: str | None = None
    args: list[str] = Field(default_factory=list)
    dtype: str | None = None
    regime: str | None = None
    thresholds: dict[str, float] = Field(default_factory=dict)
    floors: dict[str, float] = Field(default_factory=dict)  # declared minimums of printed metrics (floors.py)
    ceilings: dict[str, float] = Field(default_factory=dict)  # ... and maximums of printed times
    pass_pattern: str | None = None  # declared regular expressions for the harness's own words
    fail_pattern: str | None = None
    verdict_lines_off: list[str] = Field(default_factory=list)  # default verdict lines turned off (printout.py)
    exit_status_is_check: bool = False  # the command's exit status is its check: exit 0 is one checked shape
    command: list[str] | None = None  # a declared bench command, before its args
    repeats: int | None = None  # runs asked for per side (declaration or --gpu-repeats); None: one
    min_steps: int | None = None  # the fewest steps a run must print that it timed (runs_log.py)
    packages: list[str] | None = None  # declared import packages under test (None: the default rule)
    env: dict[str, str] = Field(default_factory=dict)  # declared variables for its command
    # declared: metric or row name -> "higher"/"lower", which way is better (parsers/figures.py)
    directions: dict[str, str] = Field(default_factory=dict)


class RunRecord(_Model):
    """What happened around the command, as the verdict saw it: with the raw output and the target's
    dtype, kind and thresholds, ``gpuverify check`` re-derives the verdict and its reasons from it.
    Nothing here is read from the output."""

    blocked: list[str] = Field(default_factory=list)  # why the command was never started
    ran: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    interrupted: str | None = None  # "KeyboardInterrupt", "SIGTERM" ...
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
    # --gpu-trace: a printed time shorter than its kernels' GPU time in the trace run, or a trace that
    # could not be read; one reason each (trace/corroborate.py), re-derived by `gpuverify check`
    trace_doubts: list[str] = Field(default_factory=list)


class Timeline(_Model):
    """When the run held its GPUs and ran its command: UTC wall times, each derived from the session's
    one reading of both clocks and a monotonic reading (so they are ordered and immune to clock steps).
    The recorded command interval covers the real one and the recorded hold lies inside the real one
    (``lock_taken`` read after the lock is taken, ``lock_released`` before it is let go):
    ``lock_taken <= command_started <= command_ended <= lock_released``. ``gpuverify check`` over several artifacts of one host reports
    any two whose lock intervals on one GPU overlap."""

    collected: str | None = None  # the session had its targets (pytest's collection was over)
    pick_started: str | None = None  # the run asked for its GPUs
    lock_taken: str | None = None  # the last of its GPU locks was taken
    command_started: str | None = None
    command_ended: str | None = None
    lock_released: str | None = None  # the first of its GPU locks was let go (null: a fixture's grant)


class ClockReading(_Model):
    """One reading of a GPU's clocks and limits. ``throttle``: the active clock-limiting reasons by name
    (NVML's ``sw_power_cap``, ``hw_slowdown``, ``sw_thermal``, ``hw_thermal``, ``hw_power_brake``... and
    ``gpu_idle``); empty when none, and when the backend gives none (see ``GpuWatch.problems``)."""

    sm_mhz: float | None = None
    mem_mhz: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
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
    start: ClockReading | None = None
    end: ClockReading | None = None
    sm_mhz_min: float | None = None
    sm_mhz_max: float | None = None
    mem_mhz_min: float | None = None
    mem_mhz_max: float | None = None
    temp_c_max: float | None = None
    power_w_max: float | None = None
    throttle_seen: list[str] = Field(default_factory=list)
    sm_mhz_rated: float | None = None  # the GPU's maximum SM clock, where the driver gives it
    throttled: bool = False
    unlike_events: list[str] | None = None
    normal_events: list[str] | None = None


class ForeignProcess(_Model):
    """A compute process on a held GPU that is not the run's own (not the command's process tree, not its
    container's processes), seen while the command ran."""

    gpu: int
    pid: int
    name: str | None = None
    user: str | None = None
    vram_mib: float | None = None
    first_seen: str
    last_seen: str


class GpuWatch(_Model):
    """The held GPUs watched while one run's command ran (one record per run of a repeated target)."""

    run: int | None = None  # 1..N of a repeated target (RunSlice.run); None for a single run
    side: str | None = None  # "A"/"B" in an A/B run
    backend: str | None = None  # how it read: "nvml", "amdsmi", "rocm-smi", "amd-smi"
    interval_s: float | None = None
    samples: int = 0
    foreign: list[ForeignProcess] = Field(default_factory=list)
    clocks: list[GpuClocks] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)  # what could not be read, and why


class SyncRecord(_Model):
    """--gpu-sync: the local checkout copied to the GPU host before the run (remote/sync.py)."""

    local_path: str
    repo: str
    host_path: str
    local_sha: str | None = None
    dirty: bool = False
    dirty_paths: list[str] = Field(default_factory=list)
    files: int = 0
    files_sha256: str = ""
    ignored_copied: list[str] = Field(default_factory=list)  # gitignored files copied because the run named them
    removed: list[str] = Field(
        default_factory=list
    )  # files deleted in the host's checkout: the local one has them no more
    replaced: list[str] = Field(default_factory=list)  # the host's own changes replaced (--gpu-sync-overwrite)


class RunSlice(_Model):
    """One of a target's repeated runs (``repeats``, ``--gpu-ab``): its part of the one raw log lies
    between the engine's begin and end lines, which say the same (runs_log.py)."""

    run: int  # 1..N within its side
    side: str | None = None  # "A" (base) / "B" (head) in an A/B run
    checkout: str | None = None  # the sha it ran
    exit_code: int | None = None
    timed_out: bool = False
    interrupted: str | None = None
    container_died: bool = False
    junit_xml: str | None = None  # an inner pytest run's report of this run


class ProfileRecord(_Model):
    """A trace or profile taken in one extra run beside the timed ones (--gpu-trace, --gpu-profile),
    stored beside the raw log and hashed like it; its numbers never enter ``perf``."""

    tool: str  # rocprofv3, nsys, torch-profiler, ncu, rocprof-compute
    version: str | None = None
    format: str  # rocpd (SQLite), nsys-sqlite, kineto-json, ncu-rep, nsys-rep, rocprof-compute (tar)
    path: str | None = None  # beside the artifact; None when the run wrote none (``problem`` says why)
    sha256: str | None = None
    bytes: int | None = None
    kernel_filter: str | None = None  # the regex of kernel names it was limited to, or matched by
    purpose: Literal["trace", "profile"] = "trace"
    exit_code: int | None = None  # the extra run's own
    problem: str | None = None  # why there is no usable file: the tool missing, the run failed


class KernelRecord(_Model):
    """A kernel the trace run dispatched: its name, launch grid and the code object it ran from."""

    name: str
    grid: list[int] = Field(default_factory=list)  # work-items (ROCm) or blocks (CUDA) per dimension
    launches: int = 0
    median_ns: int | None = None
    # sha256 of the code object (cubin, hsaco, or the byte range of a shared object) it ran; several when
    # the JIT caches hold more than one build of that name; empty when none was found
    code_objects: list[str] = Field(default_factory=list)
    code_object_paths: list[str] = Field(default_factory=list)
    rows: list[str] = Field(default_factory=list)  # the printed rows its launches were mapped to ("shape name")


class PerfSummary(_Model):
    """One printed quantity over a target's runs (per side): the median of the runs, min and max."""

    shape: str
    name: str
    stat: str | None = None
    side: str | None = None
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
    config: dict[str, bool | int | float | str | None] = Field(default_factory=dict)
    key: str | None = None
    seconds: float | None = None
    source: str = "output"
    line: int | None = None
    file: str | None = None
    run: int | None = None  # 1..N of a repeated target; 0: an A/B side's unmeasured warm-up run
    side: str | None = None


class AutotuneRecord(_Model):
    """What Triton's autotuner chose in the run (parsers/recognizers/triton_autotune.py, place/autotune_cache.py);
    ``unknown``: why no choice could be read, where none was; ``differ``: under --gpu-ab, the functions
    (and keys) whose chosen configuration differs between the sides."""

    choices: list[AutotuneChoice] = Field(default_factory=list)
    unknown: str | None = None
    differ: list[str] = Field(default_factory=list)


class AbRecord(_Model):
    """``--gpu-ab BASE``: side A is BASE, checked out as a git worktree for the run and removed after;
    side B is the checkout the run started from."""

    base_ref: str
    base_sha: str | None = None
    head_sha: str | None = None
    base_worktree: str | None = None  # on the host
    base_cache_dirs: dict[str, str] = Field(default_factory=dict)
    order: list[str] = Field(default_factory=list)  # "A1", "B1", "A2" ... as run
    # the sides' compile caches (--gpu-ab-cache): "cold" (each measured run starts from empty ones) or
    # "warm" (each side's own, filled by one unmeasured warm-up run on its own commit, in ``warmups``)
    cache_state: str | None = None
    warmups: list[RunSlice] = Field(default_factory=list)


class ImportOrigin(_Model):
    """Where one package under test came from: predicted before the run with the command's own import
    rules (its working folder, script folder, pytest's rootdir and ini ``pythonpath``, its PYTHONPATH),
    and observed inside the run (the file each of its Python processes imported it from)."""

    predicted: str | None = None  # None: not importable by those rules
    predicted_path: list[str] = Field(default_factory=list)  # the folders the command puts before PYTHONPATH
    seen: Literal["imported", "not imported", "not recorded"] = "not recorded"
    observed: str | None = None  # the file it was imported from (the first process's, when they differ)
    also_observed: list[str] = Field(default_factory=list)  # other files other processes imported it from
    processes: int = 0  # the command's Python processes that recorded their imports
    why_not_recorded: str | None = None
    checkout: str | None = None  # the worktree's own copy of the package, where it has one


class Artifact(_Model):
    schema_version: int = SCHEMA_VERSION
    plugin_version: str | None = None
    key: str | None = None
    topic: str
    ts: str
    finished_ts: str | None = None
    duration_s: float | None = None
    host: str | None = None
    container: str | None = None
    image: str | None = None
    gpu: GpuRecord = Field(default_factory=GpuRecord)
    gpus: list[GpuRecord] = Field(default_factory=list)
    host_gpus: int | None = None  # how many GPUs the host has: every index lies below it
    versions: Versions = Field(default_factory=Versions)
    repos: list[RepoRecord] = Field(default_factory=list)
    target: TargetRecord | None = None
    command: str | None = None
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    imports: dict[str, str | None] = Field(
        default_factory=dict
    )  # the origin the verdict took: observed, else predicted
    import_origins: dict[str, ImportOrigin] = Field(default_factory=dict)  # by package, both origins
    cold: bool = False
    cache_dirs: dict[str, str] = Field(default_factory=dict)
    cache_reused: bool | None = None  # warm caches held builds before the run; None when cold
    correctness: Correctness = Field(default_factory=Correctness)
    perf: list[PerfRow] = Field(default_factory=list)
    verdict: Verdict = "INCONCLUSIVE"
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    run: RunRecord | None = None  # None in artifacts written before the record was kept
    raw_output: str | None = None
    raw_output_sha256: str | None = None
    raw_output_bytes: int | None = None
    junit_xml: str | None = None  # an inner pytest run's report, saved beside the raw output
    signed_by: str | None = None  # the Signing row's signer: the identity its .sig files verify as
    timeline: Timeline | None = None  # None in artifacts written before it was kept
    image_digest: str | None = None  # the image the container ran, by content (repo digest, else image id)
    fresh_container: FreshContainerRecord | None = None  # a `run` row's container, started for this run
    builds: list[BuildRecord] = Field(default_factory=list)  # the declaration's builds this target stood on
    synced: SyncRecord | None = None  # --gpu-sync: what was copied from where (None: no copy)
    runs: list[RunSlice] = Field(default_factory=list)  # repeated runs, in the order they ran; [] for one
    perf_summary: list[PerfSummary] = Field(default_factory=list)  # from ``perf`` (summary.py)
    ab: AbRecord | None = None
    watch: list[GpuWatch] = Field(default_factory=list)  # the held GPUs while each command ran
    shard: ShardRecord | None = None  # --gpu-shard: the part of a split run it ran in (config/shards.py)
    scheduler: SchedulerRecord | None = None  # GPUs granted outside the plugin (lease/grants.py)
    machine: MachineRecord | None = None  # which machine, exactly (records/machine.py); None: not read
    autotune: AutotuneRecord | None = None  # Triton's autotuner's choices (None: not a kind Triton runs in)
    profiles: list[ProfileRecord] = Field(default_factory=list)  # --gpu-trace / --gpu-profile: their files
    kernels: list[KernelRecord] = Field(default_factory=list)  # the kernels the trace run dispatched


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


def read_artifact(path: Path) -> Artifact:
    return Artifact.model_validate_json(Path(path).read_bytes())


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
