"""pytest wiring of ``--gpu-slurm``: the session collects its GPU targets, submits each as a Slurm job
(slurm/launcher.py) and reports each target's verdict as its job ends; the summary is the usual one.
Other tests of the session run here, as without the option. Ctrl-C (and SIGTERM, SIGHUP) cancels the
session's jobs and waits until the queue holds none of them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.config.shards import load_durations, new_session_id, split
from pytest_gpuverify.engine.setup_checks import artifact_folder
from pytest_gpuverify.face.collectors import CollectsTargets, GpuTargetItem
from pytest_gpuverify.face.role_base import Role, terminate_like_ctrl_c
from pytest_gpuverify.face.shard_items import shard_id
from pytest_gpuverify.face.terminal import VerdictSummary, verdict_properties
from pytest_gpuverify.records.artifact import read_artifact
from pytest_gpuverify.remote import unran
from pytest_gpuverify.slurm.client import SlurmError
from pytest_gpuverify.slurm.launcher import (
    ARTIFACT_GRACE_S,
    JobEnd,
    SlurmLauncher,
    SlurmTarget,
    job_end,
    per_shard,
    per_target,
)

# options of this session that its jobs must not get: the launcher's own, and files only the
# controller writes (a job's would overwrite them)
NOT_PASSED_ON = ("--gpu-slurm",)
NOT_PASSED_ON_WITH_VALUE = ("--gpu-ci-summary", "--junitxml", "--junit-xml", "--result-log", "--gpu-slurm-shards")


class SlurmController(CollectsTargets, Role):
    def __init__(self, config: pytest.Config, options: RunOptions, env: EnvFile, distributing: bool) -> None:
        super().__init__(config)
        if distributing:
            raise UsageError(
                "--gpu-slurm",
                "--gpu-slurm runs each GPU target as its own Slurm job, so xdist's "
                "workers (-n, --dist) have nothing to do",
                "drop -n / --dist",
            )
        if config.getoption("gpu_shard") or config.getoption("gpu_hosts"):
            raise UsageError(
                "--gpu-slurm",
                "--gpu-slurm submits every GPU target as its own job: --gpu-shard and "
                "--gpu-hosts split the targets another way",
                "pass one of them",
            )
        self.shards = _shard_count(config.getoption("gpu_slurm_shards"))
        durations = config.getoption("gpu_durations")
        if durations and not self.shards:
            raise UsageError(
                "--gpu-durations",
                "--gpu-durations balances shards: with --gpu-slurm, one job runs each target",
                "add --gpu-slurm-shards N, or drop --gpu-durations",
            )
        self.durations = load_durations(Path(durations).expanduser()) if durations else {}
        self.options, self.env = options, env
        self.out_dir, self.moves_lock = artifact_folder(env, options.ticket, options.invocation_dir)
        self.summary = VerdictSummary(lambda: None, config.getoption("gpu_ci_summary"))
        self.helpers.append((self.summary, "gpuverify-summary"))
        self.launcher: SlurmLauncher | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self._previous_handlers = terminate_like_ctrl_c()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session):
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(f"{session.testsfailed} error(s) during collection")
        if session.config.option.collectonly:
            return True
        items = session.items
        for i, item in enumerate(items):  # the session's other tests run here
            if not isinstance(item, GpuTargetItem):
                nextitem = items[i + 1] if i + 1 < len(items) else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        targets = [i for i in items if isinstance(i, GpuTargetItem)]
        if targets:
            self._launch(session, targets)
        return True

    def _launch(self, session: pytest.Session, items: list) -> None:
        by_nodeid = {item.nodeid: item for item in items}
        targets = [
            SlurmTarget(item.nodeid, f"{item.path}::{item.name}", item.target.topic, item.target.gpus) for item in items
        ]
        specs = self._shard_jobs(targets, items) if self.shards else per_target(targets)
        settings = self.env.slurm
        self.launcher = launcher = SlurmLauncher(
            settings,
            self.out_dir,
            settings.python or sys.executable,
            passed_on(self.config),
            self.options.invocation_dir,
        )
        say = self._say
        try:
            launcher.submit_all(
                specs, lambda sub: say(f"slurm job {sub.job_id}: " + ", ".join(t.nodeid for t in sub.spec.targets))
            )
            for spec, why in launcher.refused:
                for target in spec.targets:
                    self._report_unran(by_nodeid[target.nodeid], f"never submitted to Slurm: {why}")
            launcher.wait(lambda end: self._report(by_nodeid[end.target.nodeid], end))
        except SlurmError as exc:
            self._cancel_and_report(by_nodeid, f"the Slurm launcher stopped: {exc}")
        except KeyboardInterrupt:
            self._cancel_and_report(by_nodeid, "cancelled by the session's interrupt")
            raise

    def _shard_jobs(self, targets: list, items: list) -> list:
        """--gpu-slurm-shards N: job i runs ``--gpu-shard i/N`` of the session's paths; the split is the
        one each job makes (config/shards.py), so the controller knows each job's targets."""
        assert self.shards is not None
        seconds = {shard_id(i): self.durations[i.target.topic] for i in items if i.target.topic in self.durations}
        shards = split([shard_id(t) for t in targets], self.shards, seconds)
        return per_shard(
            targets, shards, self.shards, f"slurm-{new_session_id()}", list(self.config.option.file_or_dir or [])
        )

    def _cancel_and_report(self, by_nodeid: dict, why: str) -> None:
        """Every job not ended yet is cancelled (and gone from the queue); each target gets its verdict."""
        launcher = self.launcher
        assert launcher is not None
        cancelled = launcher.cancel_all()
        if cancelled:
            self._say(f"scancel {' '.join(cancelled)}: {why}")
        grace = time.monotonic() + ARTIFACT_GRACE_S
        for job in launcher.jobs:
            if job.job_id in launcher.ended:
                continue
            state = job.last.state if job.last is not None else "PENDING"
            if state not in ("PENDING", "GONE"):  # it ran: its session writes its artifacts as it stops
                launcher.await_artifacts(job, grace)
            launcher.ended.add(job.job_id)
            for target in job.spec.targets:
                self._report(
                    by_nodeid[target.nodeid],
                    job_end(
                        job,
                        target,
                        "CANCELLED",
                        None,
                        self.out_dir,
                        why=f"slurm job {job.job_id} CANCELLED ({state} when {why})",
                    ),
                )
        submitted = {t.nodeid for j in launcher.jobs for t in j.spec.targets}
        submitted |= {t.nodeid for spec, _ in launcher.refused for t in spec.targets}  # reported already
        for nodeid, item in by_nodeid.items():  # never submitted: sbatch refused, or the interrupt came first
            if nodeid not in submitted:
                self._report_unran(item, f"never submitted to Slurm: {why}")

    def _report(self, item, end: JobEnd) -> None:
        self._say(
            f"slurm job {end.job_id} {end.state}: {end.verdict} {item.nodeid}" + (f"  {end.why}" if end.why else "")
        )
        if end.artifact is None:
            return self._report_unran(item, end.why)
        props = dict(verdict_properties(read_artifact(end.artifact), end.artifact))
        if end.overruled:  # a run the job did not finish: the job's end decides, not what its artifact says
            props.update(gpuverify_verdict=end.verdict, gpuverify_reason=end.why)
        self._log(
            item,
            end.verdict,
            f"{end.verdict}: {item.nodeid}" + (f"\n  - {end.why}" if end.why else ""),
            list(props.items()),
        )

    def _report_unran(self, item, why: str) -> None:
        path, problem = unran.write_unran(
            self.out_dir, self.moves_lock, item.nodeid, "-", why, self.options.ticket, item.target.topic
        )
        if problem:
            self.summary.write_problems.append(problem)
        self._log(
            item, "INCONCLUSIVE", f"INCONCLUSIVE: {item.nodeid}\n  - {why}", unran.verdict_properties("-", why, path)
        )

    def _log(self, item, verdict: str, longrepr: str, props: list) -> None:
        hook = item.ihook
        hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        report = pytest.TestReport(
            item.nodeid,
            item.location,
            {},
            "passed" if verdict == "PASS" else "failed",
            None if verdict == "PASS" else longrepr,
            "call",
            user_properties=props,
        )
        hook.pytest_runtest_logreport(report=report)
        hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"gpuverify: {line}")


def _shard_count(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise UsageError(
            "--gpu-slurm-shards",
            f"--gpu-slurm-shards {value!r} is not a whole number from 1 to 1000",
            "e.g. --gpu-slurm-shards 4 (one job per GPU you want busy)",
        )
    return int(value)


def passed_on(config: pytest.Config) -> list[str]:
    """The session's own arguments for each job: its options, without the launcher's, the controller's
    files, and the path arguments (each job gets its one target)."""
    args = list(config.invocation_params.args)
    paths = list(config.option.file_or_dir or [])
    out: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in NOT_PASSED_ON:
            continue
        if name in NOT_PASSED_ON_WITH_VALUE:
            skip_next = "=" not in arg
            continue
        if arg in paths and not arg.startswith("-"):
            paths.remove(arg)
            continue
        out.append(arg)
    return ["-p", "no:cacheprovider", *out] if "no:cacheprovider" not in out else out
