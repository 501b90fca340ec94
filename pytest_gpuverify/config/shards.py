"""Splitting a session's GPU targets into shards that several jobs run (``--gpu-shard I/N``).

The split is a function of the target set alone, so every job computes the same one: targets in node
id order, each given to the shard with the least total duration so far (pytest-split's
"least_duration"), the longest first. Durations come from a durations file (``gpuverify durations``,
topic -> seconds); a target without one counts as the mean of the known ones, and without a file
every target counts the same, which deals them out in turn. Shards are numbered from 0, as Buildkite's
``BUILDKITE_PARALLEL_JOB`` and Kubernetes' ``JOB_COMPLETION_INDEX`` are.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_gpuverify.config.errors import UsageError

OPTION = "--gpu-shard"
MAX_SHARDS = 1000
# the run a shard belongs to where the job's environment says it (first match): the id every shard shares
RUN_IDS = ("SLURM_ARRAY_JOB_ID", "BUILDKITE_BUILD_ID", "GITHUB_RUN_ID", "CI_PIPELINE_ID")
ATTEMPT_VARIABLE = "GITHUB_RUN_ATTEMPT"  # "Re-run failed jobs" keeps the run id and counts this up


def parse_spec(value: str, environ: Mapping[str, str]) -> tuple[int, int, str]:
    """(index, count, where it was read) from ``I/N``, ``auto`` or ``auto/N``; UsageError otherwise."""
    text = value.strip()
    fixed = re.fullmatch(r"(\d+)/(\d+)", text)
    auto = re.fullmatch(r"auto(?:/(\d+))?", text)
    if fixed:
        index, count, source = int(fixed[1]), int(fixed[2]), f"{OPTION} {text}"
    elif auto:
        index, count, source = _from_environment(environ, int(auto[1]) if auto[1] else None)
    else:
        raise UsageError(
            OPTION,
            f"{OPTION} {value!r} is not I/N, auto or auto/N",
            f"e.g. {OPTION} 0/4 (shards are numbered from 0), or {OPTION} auto in a Slurm array or "
            "a Buildkite parallel job",
        )
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(OPTION, f"{OPTION}: {count} shards ({source})", f"use 1 to {MAX_SHARDS} shards")
    if not 0 <= index < count:
        raise UsageError(
            OPTION,
            f"{OPTION}: shard {index} of {count} ({source}) is out of range",
            f"shards are numbered 0 to {count - 1}",
        )
    return index, count, source


def _from_environment(environ: Mapping[str, str], count: int | None) -> tuple[int, int, str]:
    """A Slurm array task, a Buildkite parallel job, a Kubernetes Indexed Job (its count given)."""
    if environ.get("SLURM_ARRAY_TASK_ID") and environ.get("SLURM_ARRAY_TASK_COUNT", "").strip() == "1":
        return _one_task_array(environ, count)
    if environ.get("SLURM_ARRAY_TASK_ID"):
        index, found, source = _slurm_array(environ)
    elif environ.get("BUILDKITE_PARALLEL_JOB"):
        index = _number(environ, "BUILDKITE_PARALLEL_JOB")
        found = _number(environ, "BUILDKITE_PARALLEL_JOB_COUNT")
        source = f"BUILDKITE_PARALLEL_JOB={index} of BUILDKITE_PARALLEL_JOB_COUNT={found}"
    elif environ.get("JOB_COMPLETION_INDEX"):
        index, found = _number(environ, "JOB_COMPLETION_INDEX"), None
        source = f"JOB_COMPLETION_INDEX={index}"
        if count is None:
            raise UsageError(
                OPTION,
                f"{OPTION} auto: JOB_COMPLETION_INDEX gives the index, not the count",
                f"pass {OPTION} auto/N with the Indexed Job's completions (N)",
            )
    else:
        raise UsageError(
            OPTION,
            f"{OPTION} auto: no SLURM_ARRAY_TASK_ID, BUILDKITE_PARALLEL_JOB or JOB_COMPLETION_INDEX in the environment",
            f"pass {OPTION} I/N",
        )
    if count is not None and found is not None and count != found:
        raise UsageError(
            OPTION,
            f"{OPTION} auto/{count}: the environment says {found} shards ({source})",
            f"pass {OPTION} auto, or auto/{found}",
        )
    total = count if count is not None else found
    assert total is not None  # JOB_COMPLETION_INDEX without a count raised above
    return index, total, source


def _slurm_array(environ: Mapping[str, str]) -> tuple[int, int, str]:
    """The task's place among the array's: ``--array=0-7`` and ``--array=1-16:2`` are evenly spaced;
    a list like ``--array=1,3,7`` has no place to read."""
    task, low = _number(environ, "SLURM_ARRAY_TASK_ID"), _number(environ, "SLURM_ARRAY_TASK_MIN", 0)
    count = _number(environ, "SLURM_ARRAY_TASK_COUNT")
    step = _number(environ, "SLURM_ARRAY_TASK_STEP", 1) or 1
    high = _number(environ, "SLURM_ARRAY_TASK_MAX", low + (count - 1) * step)
    if (high - low) != (count - 1) * step or (task - low) % step:
        raise UsageError(
            OPTION,
            f"{OPTION} auto: the array's task ids ({low}-{high}, {count} tasks) are not evenly spaced",
            f"submit --array=0-{count - 1}, or pass {OPTION} I/N",
        )
    index = (task - low) // step
    return index, count, f"SLURM_ARRAY_TASK_ID={task} of {count} (min {low}, step {step})"


def _one_task_array(environ: Mapping[str, str], count: int | None) -> tuple[int, int, str]:
    """An array of one task (``sbatch --array=2``: a re-run of one task of a larger array) says its task id
    but not how many shards the run has. With ``auto/N`` the task id is the shard (arrays numbered from 0,
    as ``--array=0-7``); without N it would be shard 0 of 1 and run every target: refused."""
    task = _number(environ, "SLURM_ARRAY_TASK_ID")
    if count is None:
        raise UsageError(
            OPTION,
            f"{OPTION} auto: this array has one task (SLURM_ARRAY_TASK_ID={task}, SLURM_ARRAY_TASK_COUNT=1), "
            "so it does not say how many shards the run has (a re-run of one task?)",
            f"pass {OPTION} auto/N with the whole array's task count, or {OPTION} {task}/N",
        )
    return task, count, f"SLURM_ARRAY_TASK_ID={task} of a one-task array, a re-run: {count} shards from auto/{count}"


def _number(environ: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = environ.get(name)
    if value is None and default is not None:
        return default
    if value is None or not value.strip().isdigit():
        raise UsageError(
            OPTION,
            f"{OPTION} auto: {name}={value!r} is not a whole number",
            f"pass {OPTION} I/N, or run it where {name} is set by the scheduler",
        )
    return int(value)


def run_id(given: str | None, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the run id, where it was read): ``--gpu-shard-run``, else the CI's or scheduler's run id. A
    re-run's attempt is not part of it (GitHub's "Re-run failed jobs" keeps GITHUB_RUN_ID): see
    :func:`run_attempt`."""
    if given:
        return given, "--gpu-shard-run"
    for name in RUN_IDS:
        if environ.get(name):
            return environ[name], name
    return None, None


def run_attempt(environ: Mapping[str, str]) -> int | None:
    """GitHub's attempt of the run (GITHUB_RUN_ATTEMPT, from 1); None elsewhere. A shard of a later
    attempt replaces the same shard's earlier attempts when the shards are merged."""
    value = environ.get(ATTEMPT_VARIABLE, "").strip()
    return int(value) if value.isdigit() else None


def logical_run(run: str | None, run_from: str | None, attempt: int | None) -> tuple[str | None, int]:
    """(the run every attempt shares, the attempt: 0 where none is known). Artifacts written before
    the attempt had its own field carry it in the run id (``<GITHUB_RUN_ID>.<attempt>``)."""
    if attempt is None and run_from == "GITHUB_RUN_ID" and run and re.fullmatch(r"\d+\.\d+", run):
        base, _, old = run.partition(".")
        return base, int(old)
    return run, attempt or 0


def load_durations(path: Path) -> dict[str, float]:
    """A durations file: a JSON object of topic -> seconds. A bad one is a UsageError naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            "--gpu-durations",
            f"--gpu-durations {path}: no such file",
            "write one with `gpuverify durations TICKET_DIR... -o FILE`",
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(
            "--gpu-durations",
            f"--gpu-durations {path}: not a JSON file ({exc})",
            "write it with `gpuverify durations TICKET_DIR... -o FILE`",
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) and v >= 0 for v in data.values()):
        raise UsageError(
            "--gpu-durations",
            f"--gpu-durations {path}: not an object of topic -> seconds",
            "write it with `gpuverify durations TICKET_DIR... -o FILE`",
        )
    return {str(k): float(v) for k, v in data.items()}


def split(ids: Sequence[str], count: int, durations: Mapping[str, float]) -> list[int]:
    """The shard of each of ``ids`` (node ids, or any stable names), in their order. ``durations``: id ->
    seconds, for the ones known. Deterministic: the same ids (in any order) give the same shards."""
    known = [durations[i] for i in ids if i in durations]
    default = sum(known) / len(known) if known else 1.0
    order = sorted(set(ids), key=lambda i: (-durations.get(i, default), i))
    totals = [0.0] * count
    shard_of: dict[str, int] = {}
    for name in order:
        shard = min(range(count), key=lambda s: (totals[s], s))
        shard_of[name] = shard
        totals[shard] += durations.get(name, default)
    return [shard_of[i] for i in ids]


def plan_digest(ids: Sequence[str], count: int) -> str:
    return hashlib.sha256(json.dumps([count, sorted(set(ids))]).encode()).hexdigest()[:16]


def new_session_id() -> str:
    return secrets.token_hex(6)
