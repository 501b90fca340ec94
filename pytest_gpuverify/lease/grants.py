"""GPUs granted to this process by a scheduler or a CI job, outside the plugin.

Slurm's gres plugin sets ``SLURM_STEP_GPUS`` / ``SLURM_JOB_GPUS`` (the node's GPU indices, in gres.conf
order) and, for the job's programs, ``CUDA_VISIBLE_DEVICES`` and ``ROCR_VISIBLE_DEVICES``; a CI runner or
a Kubernetes device plugin sets the visibility variables alone. Where one is set, the pick, the lock
and the command use only those GPUs. The lock is still taken: other users of the node need not go
through the scheduler.

Indices: the SMI tools, NVML and the lock files count every GPU of the node; the runtimes apply the
visibility variables. A command on the host inherits this process's environment, so on ROCm, where
``ROCR_VISIBLE_DEVICES`` filters first and ``HIP_VISIBLE_DEVICES`` counts within what it left, the
command's ``HIP_VISIBLE_DEVICES`` is the GPU's position in the grant (:func:`visible_within`). On NVIDIA
the engine's ``CUDA_VISIBLE_DEVICES`` (UUIDs, or node indices) replaces the inherited one, and a
command in a container inherits nothing: node indices there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pytest_gpuverify.records.scheduling import SchedulerRecord

# Where a grant is read, first match wins: Slurm's node indices, then each backend's visibility variables.
# A step's grant counts only within its job's (slurm_source): an inherited step variable is no grant.
SLURM_GPUS = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
VISIBILITY = {
    "rocm": ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
    "nvidia": ("CUDA_VISIBLE_DEVICES",),
}
# on ROCm a host command inherits this one, and HIP_VISIBLE_DEVICES then counts within it
RENUMBERS = {"rocm": "ROCR_VISIBLE_DEVICES"}
NONE_VISIBLE = {"", "-1", "none", "nodevfiles", "void"}  # what runtimes and Slurm write for "no GPU"
# (variable, kind): the scheduler or CI system that set a grant, and its job id variable
JOB_IDS = (
    ("SLURM_JOB_ID", "slurm"),
    ("BUILDKITE_JOB_ID", "buildkite"),
    ("GITHUB_RUN_ID", "github-actions"),
    ("CI_JOB_ID", "gitlab-ci"),
    ("JOB_COMPLETION_INDEX", "kubernetes"),
)


class GrantProblem(ValueError):
    """A grant variable that names no GPU this host has; the message names it and the fix."""


def grant_variables(environ: Mapping[str, str]) -> dict[str, str]:
    names = (*SLURM_GPUS, *dict.fromkeys(v for vs in VISIBILITY.values() for v in vs))
    return {name: environ[name] for name in names if name in environ}


def read_grant(
    environ: Mapping[str, str], vendor: str, uuids: Mapping[str, int], on_host: bool, host_gpus: int | None
) -> SchedulerRecord | None:
    """The grant this process runs under, or None. ``uuids``: UUID -> node index of this host's GPUs
    (a visibility variable may name UUIDs); ``on_host``: the commands run on the host and inherit it."""
    variables = grant_variables(environ)
    kind, job_id = _job(environ)
    source = slurm_source(environ, variables, job_id, uuids, host_gpus)
    source = source or next((name for name in VISIBILITY.get(vendor, ()) if name in variables), None)
    if source is None:
        return None
    granted = _indices(source, variables[source], uuids, host_gpus)
    renumber = RENUMBERS.get(vendor)
    renumbered_by = renumber if on_host and renumber in variables else None
    if renumbered_by and renumbered_by != source and len(_tokens(variables[renumbered_by])) != len(granted):
        raise GrantProblem(
            f"{renumbered_by}={variables[renumbered_by]!r} names {len(_tokens(variables[renumbered_by]))} "
            f"GPU(s), {source}={variables[source]!r} {len(granted)}: a command on the host could not "
            f"count within it. Fix: unset one of them, or make them name the same GPUs"
        )
    return SchedulerRecord(
        kind=kind, job_id=job_id, read_from=source, granted=granted, variables=variables, renumbered_by=renumbered_by
    )


def slurm_source(
    environ: Mapping[str, str],
    variables: Mapping[str, str],
    job_id: str | None,
    uuids: Mapping[str, int],
    host_gpus: int | None,
) -> str | None:
    """Which Slurm variable holds this allocation's own grant, or None. The job's (``SLURM_JOB_GPUS``) is
    the bound; a step's (``SLURM_STEP_GPUS``) narrows it only where it lies within the job's, or stands
    alone where it is a step of this job (``srun`` outside a batch job sets ``SLURM_STEP_ID`` with
    ``SLURM_JOB_ID``). A step variable inherited from another job's step (exported into ``sbatch``)
    names GPUs Slurm gave that job: refused."""
    job_gpus, step_gpus = variables.get("SLURM_JOB_GPUS"), variables.get("SLURM_STEP_GPUS")
    if step_gpus is None:
        return "SLURM_JOB_GPUS" if job_gpus is not None else None
    job = f"slurm job {job_id}" if job_id else "this job"
    if job_gpus is not None:
        outside = sorted(
            set(_indices("SLURM_STEP_GPUS", step_gpus, uuids, host_gpus))
            - set(_indices("SLURM_JOB_GPUS", job_gpus, uuids, host_gpus))
        )
        if outside:
            raise GrantProblem(
                f"SLURM_STEP_GPUS={step_gpus!r} names GPU(s) {','.join(map(str, outside))} that {job} "
                f"was not granted (SLURM_JOB_GPUS={job_gpus!r}): it is another job's step grant, "
                "inherited. Fix: unset SLURM_STEP_GPUS before sbatch, or submit with --export=NONE"
            )
        return "SLURM_STEP_GPUS"
    if not (environ.get("SLURM_STEP_ID") and job_id):
        raise GrantProblem(
            f"SLURM_STEP_GPUS={step_gpus!r} is set outside a Slurm step of {job} (no SLURM_STEP_ID "
            "and SLURM_JOB_ID): it is another job's grant, inherited. Fix: unset SLURM_STEP_GPUS, "
            "or run under srun/sbatch with --gres"
        )
    return "SLURM_STEP_GPUS"


def visible_within(indices: Sequence[int], record: SchedulerRecord | None) -> list[int] | None:
    """The command's visibility indices for node GPUs ``indices`` where an inherited variable
    renumbers them (their positions in the grant); None where the node indices stand."""
    if record is None or record.renumbered_by is None:
        return None
    return [record.granted.index(i) for i in indices]


def granter(record: SchedulerRecord) -> str:
    """Who granted the GPUs: ``slurm job 41 (SLURM_STEP_GPUS)``."""
    job = f" job {record.job_id}" if record.job_id else ""
    return f"{record.kind}{job} ({record.read_from})"


def granted_text(record: SchedulerRecord) -> str:
    return f"{granter(record)} granted GPU(s) {','.join(map(str, record.granted)) or 'none'}"


def _tokens(value: str) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()]


def _indices(name: str, value: str, uuids: Mapping[str, int], host_gpus: int | None) -> list[int]:
    if value.strip().lower() in NONE_VISIBLE:
        return []
    out: list[int] = []
    for token in _tokens(value):
        span = re.fullmatch(r"(\d+)-(\d+)", token)  # Slurm may write a range
        if span and name in SLURM_GPUS:
            out.extend(range(int(span[1]), int(span[2]) + 1))
        elif token.isdigit():
            out.append(int(token))
        elif token in uuids:
            out.append(uuids[token])
        else:
            raise GrantProblem(
                f"{name}={value!r}: {token!r} is neither a GPU index nor a UUID of this host's GPUs. "
                f"Fix: set {name} to indices (0,1) or UUIDs of this host, or unset it"
            )
    unknown = [i for i in out if host_gpus is not None and i >= host_gpus]
    if unknown and host_gpus is not None:
        raise GrantProblem(
            f"{name}={value!r} names GPU(s) {','.join(map(str, unknown))}, but this host has "
            f"{host_gpus} GPU(s) (0-{host_gpus - 1}). Fix: grant GPUs of this host, or unset {name}"
        )
    if len(set(out)) != len(out):
        raise GrantProblem(f"{name}={value!r} names a GPU twice. Fix: name each GPU once")
    return out


def _job(environ: Mapping[str, str]) -> tuple[str, str | None]:
    for variable, kind in JOB_IDS:
        if environ.get(variable):
            if kind == "kubernetes":  # an Indexed Job's pod: its name is the job's, with the index
                return kind, environ.get("HOSTNAME") or None
            if kind == "github-actions":
                attempt = environ.get("GITHUB_RUN_ATTEMPT")
                return kind, environ[variable] + (f".{attempt}" if attempt else "")
            return kind, environ[variable]
    return "environment", None
