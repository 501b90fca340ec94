"""Targets: what to run, how its command line and environment are built, and what it is called.

A target never runs on the host: it is a path or a declaration turned into a command that runs
inside the container, in the worktree, with only its GPUs visible. The kinds are those of
docs/targets.md, "The kinds": an aiter op_test script, a FlyDSL pytest file, a Triton kernel test in aiter, a bench harness
or one-off script declared with its command; and any kernel repo's own pytest files or folders
(``pytest``: declared, or matched by the ``gpu_pytest_paths`` globs of the ini file).
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

AITER_OP_TEST = "aiter-op-test"
FLYDSL_PYTEST = "flydsl-pytest"
TRITON_PYTEST = "triton-pytest"  # op_tests/triton_tests/** in aiter
BENCH = "bench"
PYTEST = "pytest"  # any repo's pytest file or folder
KINDS = (AITER_OP_TEST, FLYDSL_PYTEST, TRITON_PYTEST, BENCH, PYTEST)
PYTEST_KINDS = (FLYDSL_PYTEST, TRITON_PYTEST, PYTEST)

# The package under test of a kind that has its own (a declaration's ``packages`` wins; else the repo's
# pyproject.toml project: packages_under_test.py).
_PACKAGE_BY_KIND = {AITER_OP_TEST: "aiter", TRITON_PYTEST: "aiter", FLYDSL_PYTEST: "flydsl"}
AITER_KINDS = (AITER_OP_TEST, TRITON_PYTEST)  # aiter's import reads GPU_ARCHS and AITER_JIT_DIR
# kinds whose command may run Triton kernels (aiter's Triton ops, any repo's tests and harnesses; FlyDSL's are
# its own): they print the autotuner's choices (TRITON_PRINT_AUTOTUNING), unless the place or the declaration sets it
TRITON_KINDS = (AITER_OP_TEST, TRITON_PYTEST, BENCH, PYTEST)
AUTOTUNE_PRINT = "TRITON_PRINT_AUTOTUNING"
# NVLink multicast (NVLS) off in every command on NVIDIA: on a host whose GPUs are shared or partitioned, a
# program that sets up multicast objects can put the host's GPUs out of service for others. A value the
# user's environment, the container or the target's declared env sets wins.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
TABLE_KINDS = (AITER_OP_TEST, BENCH)  # print pandas tables, which elide columns under a narrow COLUMNS
SCRATCH_ROOT = "/tmp/gpuverify"  # inside a container: pid files, caches, JUnit files of the runs
JUNIT_DIR = f"{SCRATCH_ROOT}/junit"  # inside the container; the file is fetched out and removed


class Thresholds(BaseModel):
    """Correctness limits a declaration may add to what the output itself prints (docs/artifacts.md, "Verdicts")."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    cosine_sim_min: float | None = None  # e.g. 0.99
    max_abs_error_max: float | None = None
    logits_diff_max: float | None = None  # aiter/FlyDSL use 1e-3 .. 2e-3
    snr_db_min: float | None = None
    err_ratio_max: float | None = None  # the largest ``err`` (mismatch ratio) a table may print; aiter's is 0.05
    # metric or row name -> the least a printed throughput may be / the most a time may be (floors.py)
    floors: dict[str, float] = Field(default_factory=dict)
    ceilings: dict[str, float] = Field(default_factory=dict)


class Target(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str  # as shown to the user
    kind: str
    path: Path | None = None  # host path of the file (a folder for kind pytest; None for a bench command)
    command: tuple[str, ...] | None = None  # a bench harness's own command line
    args: tuple[str, ...] = ()
    topic: str
    gpus: int = 1
    dtype: str | None = None
    regime: str | None = None  # cold-L2 | warm | hipGraph, when the declaration says so
    thresholds: Thresholds = Field(default_factory=Thresholds)
    repo: str | None = None  # a Repos row by name, for a bench command that names no file
    workdir: str | None = None  # relative to the worktree
    anchor: Path | None = None  # where a target without a file lives (its declaration's directory)
    trace_filter: str | None = None  # --gpu-trace: the kernels its printed times cover; --gpu-trace-filter wins
    pass_pattern: str | None = None  # a regular expression: a line the harness prints for a checked shape
    fail_pattern: str | None = None  # ... and for a failed one
    verdict_lines_off: tuple[str, ...] = ()  # statement families turned off, by name (parsers/reading/statements.py)
    exit_status_is_check: bool = False  # an assert-only script: exit 0 is one checked shape
    repeats: int | None = None  # runs per side under one lock (runs_log.py); --gpu-repeats wins
    min_steps: int | None = None  # the fewest timed steps a run must print, where it prints a count
    # import packages under test (None: the kind's own, else the repo's pyproject project; (): none)
    packages: tuple[str, ...] | None = None
    env: dict[str, str] = Field(default_factory=dict)  # declared variables for its command (and builds)
    directions: dict[str, str] = Field(default_factory=dict)  # metric or row name -> "higher"/"lower"
    # more files that are the target's (globs, each joined to its declaration's directory: absolute), for
    # --gpu-changed-since beside its own file and the files its command names
    paths: tuple[str, ...] = ()

    @property
    def location(self) -> Path | None:
        """The host path that places the target in a repo and a worktree."""
        return self.path or self.anchor


def kind_for_path(path: Path, pytest_globs: tuple[str, ...] = (), root: Path | None = None) -> str | None:
    """The target kind a test file on the command line is, by where it lives; None: not a GPU target.
    ``pytest_globs`` (the ini's ``gpu_pytest_paths``, relative to ``root``) make other files kind
    pytest; a file of aiter's or FlyDSL's layout keeps its own kind (and its import check)."""
    parts = path.parts[:-1]
    if path.suffix == ".py" and path.name.startswith("test_"):
        if "op_tests" in parts:
            return TRITON_PYTEST if "triton_tests" in parts else AITER_OP_TEST
        if "tests" in parts and "kernels" in parts[parts.index("tests") :]:
            return FLYDSL_PYTEST
    if pytest_globs and root is not None and path.is_relative_to(root):
        rel = path.relative_to(root).as_posix()
        if any(glob_regex(g).fullmatch(rel) for g in pytest_globs):
            return PYTEST
    return None


@lru_cache(maxsize=64)
def glob_regex(glob: str) -> re.Pattern[str]:
    """A path glob as a regex: ``*``, ``?`` and ``[...]`` stay inside one folder, ``**/`` spans any."""
    glob, out, i = glob.strip().removeprefix("./"), [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append(r"(?:[^/]+/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(r".*")
            i += 2
        elif glob[i] in "*?":
            out.append(r"[^/]*" if glob[i] == "*" else r"[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body[:1] == "!" else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def topic_for(path: Path) -> str:
    """The file's name: ``op_tests/test_gemm_a8w8.py`` is ``gemm_a8w8``, whatever args it runs with
    (they are in the artifact's ``command`` and ``target.args``; a second target of one name in a
    run gets ``-2``)."""
    stem = path.stem[5:] if path.stem.startswith("test_") else path.stem
    return safe_topic(stem)


def safe_topic(text: str) -> str:
    """A topic that is safe as part of a file name on every filesystem."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")
    return cleaned[:80] or "target"


def import_package(kind: str) -> str | None:
    return _PACKAGE_BY_KIND.get(kind)


def pythonpath(kind: str, wt: str, inherited: str = "") -> str:
    """The kind's import path for the worktree ``wt``, before the place's own ``PYTHONPATH`` (``inherited``,
    kept: a container or CI job that sets one imports from it too)."""
    own = f"{wt}/python:{wt}/build-fly/python_packages" if kind == FLYDSL_PYTEST else wt
    return f"{own}:{inherited}" if inherited else own


def kind_env(kind: str, arch: str | None) -> dict[str, str]:
    """What a kind's command (and its builds) need besides the GPUs and the import path: ``COLUMNS`` only
    where pandas tables are printed (a pytest run would pad every separator line to its width), and
    ``GPU_ARCHS`` only for aiter, whose import would otherwise probe rocminfo."""
    env = {"PYTHONUNBUFFERED": "1"}  # stdout and stderr reach the file in the order they happen
    if kind in TABLE_KINDS:
        env["COLUMNS"] = "10000"  # pandas never elides columns of a summary table
    if kind in AITER_KINDS and arch:
        env["GPU_ARCHS"] = arch
    if kind in TRITON_KINDS:
        env[AUTOTUNE_PRINT] = (
            "1"  # each "best config selected" into the artifact (parsers/recognizers/triton_autotune.py)
        )
    return env


def multicast_off(vendor: str, place_env: dict[str, str]) -> dict[str, str]:
    """The NVLink multicast switches a command on NVIDIA gets: each one the place (the host user's
    environment, the container's) does not set itself."""
    if vendor != "nvidia":
        return {}
    return {k: v for k, v in MULTICAST_OFF.items() if k not in place_env}


def kept_from_place(place_env: dict[str, str]) -> dict[str, str]:
    """The place's own values (a container's, the host user's) of the kind variables it may set itself."""
    return {AUTOTUNE_PRINT: place_env[AUTOTUNE_PRINT]} if AUTOTUNE_PRINT in place_env else {}


def junit_path(run_id: str) -> str:
    return f"{JUNIT_DIR}/{run_id}.xml"


def command_argv(target: Target, rel_path: PurePosixPath | None, run_id: str) -> list[str]:
    """The repo's own command, unchanged: a rewritten command would prove something else.

    Pytest files get only what is needed to see results: ``-q`` (docs/targets.md, "The
    kinds"), ``-rAR`` so every outcome and captured output is printed, and every retry a
    plugin made (pytest-rerunfailures' ``RERUN`` lines; a test retried failed an attempt), and a
    JUnit XML report that is read instead of the progress dots."""
    if target.kind == BENCH:
        base = list(target.command or ())
        if not base and rel_path is not None:
            base = ["python3", str(rel_path)]
        return [*base, *target.args]
    if target.kind in PYTEST_KINDS:
        return [
            "python3",
            "-m",
            "pytest",
            str(rel_path),
            "-q",
            "-rAR",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit_path(run_id)}",
            *target.args,
        ]
    return ["python3", str(rel_path), *target.args]


def split_args(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))


class RunEnvironment(BaseModel):
    """The environment a target's command sees, besides what the container itself sets: its GPUs, the
    import path, the kind's variables (:func:`kind_env`), its compile caches and the declared ``env``."""

    model_config = ConfigDict(defer_build=True)

    visible_var: str
    visible_value: str
    pythonpath: str
    kind: str
    arch: str | None = None
    caches: dict[str, str] = Field(default_factory=dict)  # variable -> folder (place/caches.py)
    declared: dict[str, str] = Field(default_factory=dict)
    kept: dict[str, str] = Field(default_factory=dict)  # the place's own values, over the kind's (kept_from_place)
    multicast: dict[str, str] = Field(default_factory=dict)  # NVLink multicast off (multicast_off)

    def as_env(self) -> dict[str, str]:
        return {
            self.visible_var: self.visible_value,
            "PYTHONPATH": self.pythonpath,
            **kind_env(self.kind, self.arch),
            **self.multicast,
            **self.kept,
            **self.caches,
            **self.declared,
        }
