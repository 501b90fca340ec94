"""A job whose batch script never started (Slurm ends it FAILED with JobLaunchFailure, or holds it as
"launch failed requeued held") is submitted once more, since its session ran nothing; a second launch
failure ends its targets INCONCLUSIVE naming both jobs. Slurm's clients are the boundary here: their
answers are played back in the order slurmctld gave them in the node-kill test."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.slurm_settings import SlurmSettings
from pytest_gpuverify.slurm import client
from pytest_gpuverify.slurm.launcher import JobSpec, SlurmLauncher, SlurmTarget

TARGET = SlurmTarget("op_tests/test_a.py::a", "/repo/op_tests/test_a.py::a", "a", 1)


class Queue:
    """slurmctld as the launcher sees it: each submitted job's states, one per poll."""

    def __init__(self, plans: list[list[client.JobState]]):
        self.plans = plans
        self.submitted: list[str] = []
        self.cancelled: list[str] = []
        self.polls: dict[str, int] = {}

    def submit(self, args, command, env=None) -> str:
        job = str(100 + len(self.submitted))
        self.submitted.append(job)
        return job

    def states(self, ids, env=None) -> dict[str, client.JobState]:
        found = {}
        for job in ids:
            plan = self.plans[self.submitted.index(job)]
            n = self.polls.get(job, 0)
            self.polls[job] = n + 1
            found[job] = _with_id(plan[min(n, len(plan) - 1)], job)
        return found

    def cancel(self, ids, env=None) -> None:
        self.cancelled += list(ids)


def _with_id(state: client.JobState, job: str) -> client.JobState:
    return client.JobState(job, state.state, state.reason)


@pytest.fixture
def launch(tmp_path: Path, monkeypatch):
    def run(plans: list[list[client.JobState]], restarts=lambda job, env=None: (0, False)):
        queue = Queue(plans)
        monkeypatch.setattr(client, "submit", queue.submit)
        monkeypatch.setattr(client, "states", queue.states)
        monkeypatch.setattr(client, "cancel", queue.cancel)
        monkeypatch.setattr(client, "exit_code", lambda job, env=None: 1)
        monkeypatch.setattr(client, "restarts", restarts)
        launcher = SlurmLauncher(SlurmSettings(), tmp_path, "python3", [], tmp_path, poll_s=0.0)
        launcher.submit_all([JobSpec("a", (TARGET.selector,), 1, (TARGET,))])
        ends = []
        launcher.wait(ends.append)
        return queue, ends

    return run


def state(name: str, reason: str = "") -> client.JobState:
    return client.JobState("", name, reason)


def test_a_job_that_failed_to_launch_is_submitted_once_more(launch):
    queue, ends = launch(
        [[state("PENDING", "Resources"), state("FAILED", "JobLaunchFailure")], [state("RUNNING"), state("COMPLETED")]]
    )
    assert queue.submitted == ["100", "101"]
    assert [(e.job_id, e.state) for e in ends] == [("101", "COMPLETED")]


def test_a_launch_failure_held_in_the_queue_is_cancelled_and_submitted_again(launch):
    queue, ends = launch([[state("PENDING", "launch failed requeued held")], [state("COMPLETED")]])
    assert queue.cancelled == ["100"]
    assert [e.job_id for e in ends] == ["101"]


def test_a_second_launch_failure_ends_the_target_naming_both_jobs(launch):
    queue, ends = launch([[state("FAILED", "JobLaunchFailure")], [state("FAILED", "JobLaunchFailure")]])
    assert queue.submitted == ["100", "101"]
    (end,) = ends
    assert end.verdict == "INCONCLUSIVE"
    assert "slurm job 101 FAILED (JobLaunchFailure)" in end.why
    assert "submitted again after job 100 failed to launch" in end.why


def test_a_job_that_ran_and_failed_is_not_submitted_again(launch):
    queue, ends = launch([[state("RUNNING"), state("FAILED", "NonZeroExitCode")]])
    assert queue.submitted == ["100"]
    assert ends[0].state == "FAILED"


def test_a_job_seen_failed_for_a_poll_then_requeued_runs_to_its_end(launch):
    """``scontrol requeue`` stops the batch script: one poll may read FAILED before the job is back in the
    queue with its restart count grown; the controller waits for the end that stands."""
    answers = iter([(1, True)])  # the first look after FAILED: requeued once, back in the queue
    plan = [state("RUNNING"), state("FAILED"), state("PENDING"), state("RUNNING"), state("COMPLETED")]
    queue, ends = launch([plan], restarts=lambda job, env=None: next(answers, (1, False)))
    assert queue.submitted == ["100"]
    assert [(e.job_id, e.state) for e in ends] == [("100", "COMPLETED")]
