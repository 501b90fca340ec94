"""Slurm's own command-line clients, read through their parsable output: ``sbatch --parsable`` (the
job id), ``squeue -h -t all -o`` (each job's state and why it waits), ``scontrol show job -o`` (a
finished job's exit code) and ``scancel``. They need no accounting database (``sacct`` does) and no
Python on the cluster side; every call has a time limit, and a failure is one line naming the command.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

CALL_TIMEOUT_S = 30.0
# states after which a job never runs again (squeue's long names)
FINISHED = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "PREEMPTED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "REVOKED",
    "SPECIAL_EXIT",
}


class SlurmError(RuntimeError):
    """A Slurm client failed; the message names the command, its output and the fix."""


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, CANCELLED ... ("GONE": the controller no longer knows it)
    reason: str = ""  # why it is pending, or how it ended (squeue's %r)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED or self.state == "GONE"


def _call(argv: Sequence[str], env: dict | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=CALL_TIMEOUT_S, env=env)
    except FileNotFoundError:
        raise SlurmError(
            f"{argv[0]} not found: the Slurm clients are not on PATH. Fix: run on a Slurm login "
            "node, or install slurm-client"
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"{shlex.join(argv)} gave no answer within {CALL_TIMEOUT_S:g} s. Fix: check that "
            "slurmctld answers (scontrol ping)"
        ) from None


def submit(args: Sequence[str], command: Sequence[str], env: dict | None = None) -> str:
    """``sbatch --parsable ARGS --wrap COMMAND``; the job id."""
    argv = ["sbatch", "--parsable", *args, "--wrap", shlex.join(command)]
    res = _call(argv, env)
    job = res.stdout.strip().split(";", 1)[0]
    if res.returncode != 0 or not job.isdigit():
        said = (res.stderr.strip() or res.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise SlurmError(
            f"sbatch refused the job ({said[0]}). Fix: check the Slurm section of the env file "
            "(partition, account, time, gpus per target) against `sinfo`"
        )
    return job


def states(job_ids: Sequence[str], env: dict | None = None) -> dict[str, JobState]:
    """Each job's state; a job the controller has forgotten (purged after MinJobAge) is GONE."""
    if not job_ids:
        return {}
    res = _call(["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i|%T|%r"], env)
    if res.returncode != 0 and len(job_ids) > 1:  # one forgotten id fails the whole query: ask one by one
        found: dict[str, JobState] = {}
        for job in job_ids:
            found.update(states([job], env))
        return found
    seen = {}
    for line in res.stdout.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3 and parts[0] in job_ids:
            seen[parts[0]] = JobState(parts[0], parts[1].split()[0].rstrip("+"), parts[2])
    return {job: seen.get(job, JobState(job, "GONE", "no longer known to slurmctld")) for job in job_ids}


def exit_code(job_id: str, env: dict | None = None) -> int | None:
    """The batch script's exit status (``ExitCode=1:0``); None where scontrol does not say."""
    res = _call(["scontrol", "show", "job", "-o", job_id], env)
    found = re.search(r"\bExitCode=(\d+):(\d+)", res.stdout) if res.returncode == 0 else None
    return int(found[1]) if found else None


def restarts(job_id: str, env: dict | None = None) -> tuple[int, bool]:
    """(how often Slurm requeued the job: ``Restarts=``, after ``scontrol requeue``, a node failure or a
    preemption; whether it is back in the queue now: a requeue under way)."""
    res = _call(["scontrol", "show", "job", "-o", job_id], env)
    count = re.search(r"\bRestarts=(\d+)", res.stdout) if res.returncode == 0 else None
    state = re.search(r"\bJobState=(\S+)", res.stdout) if res.returncode == 0 else None
    back = state is not None and state[1] in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING")
    return (int(count[1]) if count else 0), back


def cancel(job_ids: Sequence[str], env: dict | None = None) -> None:
    if job_ids:
        _call(["scancel", *job_ids], env)
