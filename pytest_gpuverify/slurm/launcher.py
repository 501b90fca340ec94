"""The Slurm launcher: one batch job per GPU target, or per shard of them (``--gpu-shard i/N``), each
running the plugin on its node against the shared tickets folder; the controller waits for them and
reads each target's verdict as its job ends.
Usable without pytest (the pytest wiring is face/slurm_role.py).

A job's verdict is its artifact's when the job ran to its end (COMPLETED, or FAILED with an artifact:
pytest exits 1 on a FAIL). A job that was cancelled, timed out, was preempted, lost its node or never
started within ``start within`` is INCONCLUSIVE naming the job id and its state, except for the targets
it finished before it stopped: a whole run's artifact keeps its verdict. Where a target has no artifact
the controller writes one (remote/unran.py), so no target is ever without its artifact.

A job Slurm requeued (``scontrol requeue``, a node failure, preemption) is the same job run again: its
``start within`` counts from its return to the queue (its own restart count says it came back), and its
log is appended to (``--open-mode=append``), so the first attempt's output survives.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.config.slurm_settings import SlurmSettings
from pytest_gpuverify.slurm import client

POLL_S = 0.5
CANCEL_WAIT_S = 60.0  # after scancel, how long the controller waits for the queue to let go of its jobs
# slurmctld calls a job CANCELLED at once, while its session still writes its artifact (Slurm's KillWait
# lets it, 30 s by default): how long the controller looks for that artifact of a job that was running
ARTIFACT_GRACE_S = 45.0
# states where Slurm signals a running job's session and gives it KillWait to write its artifacts
SIGNALLED = {"CANCELLED", "TIMEOUT", "PREEMPTED", "DEADLINE"}
# a job whose batch script never started (its node died or refused it while the job launched): Slurm ends it
# FAILED with the reason JobLaunchFailure, or holds it in the queue ("launch failed requeued held"). Its
# session ran nothing, so the controller submits the job once more rather than losing its targets.
LAUNCH_FAILED = re.compile(r"launch\s*_?fail", re.I)
RELAUNCHES = 1
# a log line that says why a session stopped (pytest's usage errors, a traceback's last line, a node's
# Python without pytest or the plugin: "python3: No module named pytest", "pytest: error: unrecognized ...")
CAUSE_LINE = re.compile(
    r"^(?:ERROR: .*|\w+(?:Error|Exception): .*|INTERNALERROR> \w+(?:Error|Exception).*|"
    r"slurmstepd: error: .*|\S+: No module named .*|\S+: error: .*)$"
)
# a line of the job's summary (terminal.summary_lines): verdict, node id ... -> artifact
SUMMARY_LINE = re.compile(r"^\s*(?:PASS|FAIL|INCONCLUSIVE)\s+(\S+)\s.*-> (/\S*bench_\S+\.json)\s*$", re.M)


@dataclass(frozen=True)
class SlurmTarget:
    nodeid: str  # as the controller collected it
    selector: str  # what a job of this target alone is given: the file's absolute path and the item's name
    topic: str
    gpus: int


@dataclass(frozen=True)
class JobSpec:
    """One batch job: one target (its selector), or a shard of them (``--gpu-shard i/N`` and the paths)."""

    name: str  # the job's name after ``gpuverify-``, and its log's: a topic, or shard-1-of-4
    args: tuple[str, ...]  # what the job's pytest gets after the session's options
    gpus: int
    targets: tuple[SlurmTarget, ...]


@dataclass
class Submitted:
    spec: JobSpec
    job_id: str
    log: Path
    submitted_at: float  # monotonic
    last: client.JobState | None = None
    queued_at: float = 0.0  # monotonic: when it last entered the queue (its submission, or its requeue)
    restarts: int = 0  # Slurm's restart count, as last read
    relaunched_from: tuple[str, ...] = ()  # earlier jobs of this spec that never launched
    finished_polls: int = 0  # polls in a row that found it finished (see SlurmLauncher._ended)


@dataclass
class JobEnd:
    target: SlurmTarget
    job_id: str
    state: str
    verdict: str  # PASS, FAIL, INCONCLUSIVE
    why: str  # the reason shown (empty for a PASS)
    artifact: Path | None  # the job's own artifact of the target, or None (the controller writes one)
    log: Path
    exit_code: int | None = None
    overruled: bool = False  # the job's end decides the verdict, not its artifact (a run it did not finish)


def per_target(targets: Sequence[SlurmTarget]) -> list[JobSpec]:
    return [JobSpec(t.topic, (t.selector,), t.gpus, (t,)) for t in targets]


def per_shard(
    targets: Sequence[SlurmTarget], shards: Sequence[int], count: int, run: str, paths: Sequence[str]
) -> list[JobSpec]:
    """``count`` jobs, job i running ``--gpu-shard i/count`` of the session's paths; ``shards``: each
    target's shard, as the jobs will split them (config/shards.py). A shard given no target is not submitted."""
    specs = []
    for index in range(count):
        mine = tuple(t for t, s in zip(targets, shards) if s == index)
        if mine:
            specs.append(
                JobSpec(
                    f"shard-{index}-of-{count}",
                    ("--gpu-shard", f"{index}/{count}", "--gpu-shard-run", run, *paths),
                    max(t.gpus for t in mine),
                    mine,
                )
            )
    return specs


@dataclass
class SlurmLauncher:
    settings: SlurmSettings
    out_dir: Path  # where the targets' artifacts go (the shared tickets folder's ticket)
    python: str
    pytest_args: list[str]  # the session's own options, passed on to every job
    workdir: Path
    env: dict | None = None  # the clients' environment (SLURM_CONF ...); None: this process's
    poll_s: float = POLL_S
    jobs: list[Submitted] = field(default_factory=list)
    ended: set[str] = field(default_factory=set)  # job ids
    refused: list[tuple[JobSpec, str]] = field(default_factory=list)  # jobs sbatch refused, and its words

    def job_args(self, spec: JobSpec, log: Path) -> list[str]:
        s = self.settings
        args = [
            f"--job-name=gpuverify-{spec.name}",
            f"--output={log}",
            f"--chdir={self.workdir}",
            f"--gres=gpu:{s.gpus_per_target or spec.gpus}",
            "--export=ALL",
            "--open-mode=append",
        ]
        args += [f"--partition={s.partition}"] if s.partition else []
        args += [f"--account={s.account}"] if s.account else []
        return args + ([f"--time={s.time}"] if s.time else [])

    def submit_all(self, specs: Sequence[JobSpec], on_submit: Callable[[Submitted], None] = lambda s: None) -> None:
        logs = self.out_dir / "slurm"
        from pytest_gpuverify.common.files import make_dirs

        make_dirs(logs)  # the ticket folder too: group-shared where its parent is, whatever the umask
        for spec in specs:
            sub = self._submit(spec)
            if sub is not None:
                on_submit(sub)

    def _submit(self, spec: JobSpec, relaunched_from: tuple[str, ...] = ()) -> Submitted | None:
        logs = self.out_dir / "slurm"
        command = [self.python, "-m", "pytest", *self.pytest_args, *spec.args]
        try:
            job = client.submit(self.job_args(spec, logs / f"{spec.name}.%j.out"), command, self.env)
        except client.SlurmError as exc:  # this job only (too many GPUs, a wrong partition): the others go on
            self.refused.append((spec, str(exc)))
            return None
        now = time.monotonic()
        sub = Submitted(spec, job, logs / f"{spec.name}.{job}.out", now, queued_at=now, relaunched_from=relaunched_from)
        self.jobs.append(sub)
        return sub

    def wait(self, on_end: Callable[[JobEnd], None]) -> None:
        """Until every job has ended; a job pending past ``start within`` is cancelled and ends so.
        ``on_end``: called for each target of a job, once the job ended."""
        while len(self.ended) < len(self.jobs):
            open_jobs = [j for j in self.jobs if j.job_id not in self.ended]
            now = client.states([j.job_id for j in open_jobs], self.env)
            for job in open_jobs:
                state = now[job.job_id]
                if state.state == "PENDING" and job.last is not None and job.last.state not in ("PENDING", "GONE"):
                    job.queued_at = time.monotonic()  # back in the queue: requeued
                if self._never_launched(job, state):
                    client.cancel([job.job_id], self.env)  # a held one leaves the queue; an ended one is gone
                    self.ended.add(job.job_id)
                    if self._submit(job.spec, (*job.relaunched_from, job.job_id)) is None:
                        self.ended.discard(job.job_id)
                        self._end(job, state.state, "", on_end, state.reason)
                elif (
                    state.state == "PENDING"
                    and time.monotonic() - job.queued_at > self.settings.start_within_s
                    and not self._requeued(job)
                ):
                    client.cancel([job.job_id], self.env)
                    why = (
                        f"slurm job {job.job_id} never started within {self.settings.start_within_s:g} s "
                        f"(PENDING, {state.reason or 'no reason given'}); cancelled"
                    )
                    self._end(job, "PENDING", why, on_end)
                elif state.finished and self._ended(job, state):
                    self._end(job, state.state, "", on_end, state.reason)
                if not state.finished:
                    job.finished_polls = 0
                job.last = state
            if len(self.ended) < len(self.jobs):
                time.sleep(self.poll_s)

    def _ended(self, job: Submitted, state: client.JobState) -> bool:
        """A finished state that stands: not requeued since (``scontrol requeue`` stops the batch script, which
        can show FAILED for a poll before the job is back in the queue; a node failure, a preemption), and
        seen on two polls running (a purged job, GONE, at once)."""
        if self._requeued(job, ended=True):
            job.finished_polls = 0
            return False
        job.finished_polls += 1
        return job.finished_polls >= 2 or state.state == "GONE"

    def _never_launched(self, job: Submitted, state: client.JobState) -> bool:
        """Slurm says the job's batch script never started (see LAUNCH_FAILED), no artifact of its targets
        exists, and the spec has relaunches left."""
        return (
            (state.finished or state.state == "PENDING")
            and bool(LAUNCH_FAILED.search(state.reason))
            and len(job.relaunched_from) < RELAUNCHES
            and all(job_artifact(job, t, self.out_dir)[0] is None for t in job.spec.targets)
        )

    def _requeued(self, job: Submitted, ended: bool = False) -> bool:
        """The job came back to the queue since the controller last looked: its restart count grew (a
        requeue between two polls), or, for a job that ``ended`` in a state Slurm requeues after, it is
        queued again. Its ``start within`` starts again."""
        count, back = client.restarts(job.job_id, self.env)
        if count > job.restarts or (ended and back):
            job.restarts, job.queued_at = count, time.monotonic()
            return True
        return False

    def _end(self, job: Submitted, state: str, why: str, on_end: Callable[[JobEnd], None], reason: str = "") -> None:
        code = client.exit_code(job.job_id, self.env) if state not in ("PENDING", "GONE") else None
        # a signalled session writes its artifacts within KillWait; one that exited (COMPLETED, FAILED) wrote
        # them already, and a lost node writes nothing more
        if state in SIGNALLED and job.last is not None and job.last.state not in ("PENDING", "GONE"):
            self.await_artifacts(job, time.monotonic() + ARTIFACT_GRACE_S)
        self.ended.add(job.job_id)
        for target in job.spec.targets:
            on_end(job_end(job, target, state, code, self.out_dir, why, reason))

    def await_artifacts(self, job: Submitted, until: float) -> None:
        """A job that ran, stopped: until its session has written its targets' artifacts (or ``until``)."""
        while any(job_artifact(job, t, self.out_dir)[0] is None for t in job.spec.targets) and time.monotonic() < until:
            time.sleep(self.poll_s)

    def cancel_all(self) -> list[str]:
        """Ctrl-C: scancel every job of the session still queued or running, then wait until the queue
        holds none of them (bounded). Returns the ids cancelled."""
        open_ids = [j.job_id for j in self.jobs if j.job_id not in self.ended]
        client.cancel(open_ids, self.env)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while open_ids and time.monotonic() < deadline:
            if all(s.finished for s in client.states(open_ids, self.env).values()):
                break
            time.sleep(self.poll_s)
        return open_ids


def job_end(
    job: Submitted,
    target: SlurmTarget,
    state: str,
    exit_code: int | None,
    out_dir: Path,
    why: str = "",
    reason: str = "",
) -> JobEnd:
    """The target's verdict from its job's end and the artifact it wrote (see the module's rule)."""
    artifact, art = job_artifact(job, target, out_dir)
    ran_out = state == "COMPLETED" or (state == "FAILED" and art is not None)
    # a target the job finished before it was stopped: its run was whole, its verdict stands
    finished = art is not None and art.run is not None and art.run.ran and not art.run.interrupted
    if art is not None and (ran_out or finished):
        return JobEnd(
            target,
            job.job_id,
            state,
            art.verdict,
            "" if art.verdict == "PASS" else "; ".join(art.reasons[:1]),
            artifact,
            job.log,
            exit_code,
        )
    if not why:
        how = f" ({reason})" if reason and reason not in ("None", "") else ""
        code = f", exit code {exit_code}" if exit_code is not None and state == "FAILED" else ""
        why = f"slurm job {job.job_id} {state}{how}{code}"
        if job.relaunched_from:
            why += f" (submitted again after job {', '.join(job.relaunched_from)} failed to launch)"
        if art is not None and art.reasons:
            why += f": {art.reasons[0]}"
        else:
            cause = log_cause(job.log)
            why += (f": {cause}" if cause else "") + f"; its log: {job.log}"
    return JobEnd(target, job.job_id, state, "INCONCLUSIVE", why, artifact, job.log, exit_code, overruled=True)


def log_cause(log: Path) -> str:
    """The last line of a job's log that says why its session stopped (a usage error, an exception), or ''."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    causes = [line.strip() for line in lines if CAUSE_LINE.match(line.strip())]
    return causes[-1][:300] if causes else ""


def job_artifact(job: Submitted, target: SlurmTarget, out_dir: Path):
    """(path, artifact) of ``target`` the job wrote, or (None, None): the one its session's summary
    names for it, else the one of its topic whose scheduler record names the job (an interrupted
    session prints no summary)."""
    from pytest_gpuverify.records.artifact import read_artifact

    try:
        named = [
            Path(path)
            for nodeid, path in SUMMARY_LINE.findall(job.log.read_text(errors="replace"))
            if nodeid == target.nodeid
        ]
        lines = SUMMARY_LINE.findall(job.log.read_text(errors="replace"))
    except OSError:
        named, lines = [], []
    if not named and len(lines) == 1 and len(job.spec.targets) == 1:  # a job of one target: its one line
        named = [Path(lines[0][1])]
    for path in named[-1:] + sorted(out_dir.glob(f"bench_{target.topic}*.json")):
        try:
            art = read_artifact(path)
        except (OSError, ValueError):
            continue
        if path in named or (
            art.topic == target.topic and art.scheduler is not None and art.scheduler.job_id == job.job_id
        ):
            return path, art
    return None, None
