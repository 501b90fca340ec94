"""The run's options as one typed model, built from pytest's options or from the CLI."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.config.errors import UsageError

TICKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


# The name the setup checks have always raised; every usage error is one type (errors.py).
SetupError = UsageError


class RunOptions(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    env_path: Path
    ticket: str | None = None
    arch: str | None = None
    host: str | None = None
    container: str | None = None
    window_s: float = 2.0
    wait_s: float = 0.0
    timeout_s: float = 3600.0
    topic: str | None = None
    cold: bool = False
    allow_dirty: bool = False
    start_container: bool = False
    invocation_dir: Path = Path(".")
    echo_output: bool = False
    on_host: bool = False  # an xdist worker started over SSH on the Hosts row `host` (remote/)
    repeats: int | None = None  # --gpu-repeats: runs per target (and side) under one lock
    ab_base: str | None = None  # --gpu-ab: the git ref of the base side (ab.py)
    ab_cache: str | None = None  # --gpu-ab-cache: "cold" or "warm"; None: warm, cold under --gpu-cold
    ci_summary: Path | None = None  # --gpu-ci-summary: where the CI summary markdown goes
    attest_key: Path | None = None  # --gpu-attest-key: a key file that signs the attestations too
    paths: tuple[Path, ...] = ()  # the path arguments (where the targets are): --gpu-ab's checkouts
    trace: str | None = None  # --gpu-trace: "kernels", one extra run under the platform's kernel tracer
    trace_filter: str | None = None  # --gpu-trace-filter: the kernels (by name) the printed rows time
    profile: str | None = None  # --gpu-profiler: one extra run under this profiler (PROFILERS)
    profile_filter: str | None = None  # --gpu-profiler-filter: the kernels (by name) it profiles


def check_attest_key(value: str | None, base: Path) -> Path | None:
    """--gpu-attest-key's file, readable now: a key that fails shows before any GPU is touched."""
    if not value:
        return None
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise UsageError(
            "--gpu-attest-key",
            f"--gpu-attest-key {value}: no such file",
            "give an ed25519 or ECDSA private key file (`ssh-keygen -t ed25519 -N '' -f FILE`)",
        )
    return path


def check_ticket(ticket: str | None) -> str | None:
    if ticket is None:
        return None
    if not TICKET_RE.fullmatch(ticket):
        raise UsageError(
            "--ticket",
            f"--ticket {ticket!r} is not a ticket key",
            "use letters, digits, '.', '_' or '-' (up to 64, starting with a letter or digit), e.g. --ticket AITER-123",
        )
    return ticket


def check_topic(topic: str | None, option: str = "--gpu-topic") -> str | None:
    """An artifact topic is a name like a ticket key: it becomes ``bench_<topic>.json`` inside the
    ticket folder, so a ``/``, a ``..`` or a NUL could write elsewhere. A ``.json`` given is dropped."""
    if topic is None:
        return None
    name = topic[: -len(".json")] if topic.endswith(".json") else topic
    if not TICKET_RE.fullmatch(name) or ".." in name or name.endswith(".json"):
        shown = repr(topic if len(topic) <= 40 else topic[:40] + "...")
        raise UsageError(
            option,
            f"{option} {shown} is not a topic name",
            "use letters, digits, '.', '_' or '-' (up to 64, starting with a letter or digit, no '..'), e.g. gemm_bf16",
        )
    return name


def check_seconds(option: str, value: object, minimum: float = 0.0) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UsageError(option, f"{option} {value!r} is not a number of seconds", f"e.g. {option} 2") from None
    if not seconds >= minimum or seconds != seconds or seconds == float("inf"):
        raise UsageError(option, f"{option} {value!r} must be a finite number >= {minimum:g}", f"e.g. {option} 2")
    return seconds


def check_repeats(value: object) -> int | None:
    if value is None:
        return None
    try:
        count = int(str(value))
    except ValueError:
        count = 0
    if count < 1 or count > 1000:
        raise UsageError(
            "--gpu-repeats", f"--gpu-repeats {value!r} is not a whole number from 1 to 1000", "e.g. --gpu-repeats 3"
        )
    return count


AB_CACHE_STATES = ("warm", "cold")


def check_ab_cache(value: str | None, ab_base: str | None, cold: bool) -> str | None:
    """--gpu-ab-cache: one of :data:`AB_CACHE_STATES`, for an A/B run, and not warm under --gpu-cold."""
    if value is None:
        return None
    if value not in AB_CACHE_STATES:
        raise UsageError("--gpu-ab-cache", f"--gpu-ab-cache {value!r} is not a cache state", "use warm or cold")
    if not ab_base:
        raise UsageError(
            "--gpu-ab-cache",
            "--gpu-ab-cache sets the caches of --gpu-ab's sides, and no --gpu-ab was given",
            "add --gpu-ab BASE, or drop --gpu-ab-cache",
        )
    if cold and value == "warm":
        raise UsageError(
            "--gpu-ab-cache",
            "--gpu-ab-cache warm warms the caches that --gpu-cold asks to be empty",
            "drop one of them (--gpu-cold alone runs the sides cold)",
        )
    return value


TRACE_KINDS = ("kernels",)
PROFILERS = ("ncu", "nsys", "rocprofv3", "rocprof-compute")


def check_trace(value: str | None) -> str | None:
    if value is None:
        return None
    if value not in TRACE_KINDS:
        raise UsageError("--gpu-trace", f"--gpu-trace {value!r} is not a trace kind", "use --gpu-trace kernels")
    return value


def check_profiler(value: str | None) -> str | None:
    if value is None:
        return None
    if value not in PROFILERS:
        raise UsageError(
            "--gpu-profiler", f"--gpu-profiler {value!r} is not a profiler", f"use one of {', '.join(PROFILERS)}"
        )
    return value


def check_kernel_filter(option: str, value: str | None, needs: str | None, needed: str) -> str | None:
    """A kernel-name regex (Python ``re``), given only with the option it narrows."""
    if value is None:
        return None
    if needs is None:
        raise UsageError(option, f"{option} narrows {needed}, and no {needed} was given", f"add {needed}")
    try:
        re.compile(value)
    except re.error as exc:
        raise UsageError(
            option, f"{option} {value!r} is not a regular expression ({exc})", f"e.g. {option} gemm"
        ) from None
    return value
