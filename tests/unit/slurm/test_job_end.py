"""How a target ends with its job: a whole run's artifact keeps its verdict however the job ended (a
time limit, a scancel, a lost node); a run the job did not finish is the job's; a job that failed without
an artifact is reported with its log's one-line cause. Real artifact and log files."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.records.artifact import RunRecord, SchedulerRecord
from pytest_gpuverify.remote.unran import unran_artifact
from pytest_gpuverify.slurm.launcher import JobSpec, SlurmTarget, Submitted, job_end, log_cause

TARGET = SlurmTarget("op_tests/test_a.py::a", "/repo/op_tests/test_a.py::a", "a", 1)


def job(tmp_path: Path, log_text: str = "") -> Submitted:
    log = tmp_path / "slurm" / "shard-0-of-1.41.out"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(log_text)
    return Submitted(JobSpec("shard-0-of-1", (), 1, (TARGET, TARGET)), "41", log, 0.0)


def artifact(tmp_path: Path, verdict: str, run: RunRecord, notes: list[str]) -> Path:
    art = unran_artifact(TARGET.nodeid, "gvnode1", "x", "K", "a").model_copy(
        update=dict(
            verdict=verdict,
            reasons=[] if verdict == "PASS" else ["interrupted (SIGTERM): the command was stopped"],
            run=run,
            notes=notes,
            scheduler=SchedulerRecord(kind="slurm", job_id="41", read_from="SLURM_JOB_GPUS", granted=[0]),
        )
    )
    path = tmp_path / "bench_a.json"
    store_artifact(art, path, None)
    return path


def test_a_target_the_stopped_job_finished_stays_pass_with_no_reason(tmp_path):
    path = artifact(tmp_path, "PASS", RunRecord(ran=True), ["slurm job 41 (SLURM_JOB_GPUS) granted GPU(s) 0"])
    for state in ("TIMEOUT", "CANCELLED", "NODE_FAIL"):
        end = job_end(job(tmp_path), TARGET, state, None, tmp_path)
        assert (end.verdict, end.why, end.artifact, end.overruled) == ("PASS", "", path, False), state


def test_a_run_the_job_stopped_is_inconclusive_naming_the_job(tmp_path):
    artifact(tmp_path, "INCONCLUSIVE", RunRecord(ran=True, interrupted="SIGTERM"), ["a note, not a reason"])
    end = job_end(job(tmp_path), TARGET, "TIMEOUT", None, tmp_path)
    assert end.verdict == "INCONCLUSIVE" and end.overruled
    assert end.why == "slurm job 41 TIMEOUT: interrupted (SIGTERM): the command was stopped", end.why


def test_a_job_that_failed_without_an_artifact_gives_its_logs_cause(tmp_path):
    log = (
        "============ test session starts ============\n"
        "ERROR: /shared/env.md: section 'GPU lock': no row for host gvnode2. Fix: add | * | builtin | ... |\n\n"
    )
    end = job_end(job(tmp_path, log), TARGET, "FAILED", 4, tmp_path)
    assert end.verdict == "INCONCLUSIVE" and end.artifact is None
    assert end.why.startswith("slurm job 41 FAILED, exit code 4: ERROR: /shared/env.md: section 'GPU lock': no row"), (
        end.why
    )
    assert end.why.endswith(f"; its log: {tmp_path / 'slurm' / 'shard-0-of-1.41.out'}")


def test_a_log_without_a_cause_gives_none(tmp_path):
    log = tmp_path / "x.out"
    log.write_text("collected 1 item\n\n")
    assert log_cause(log) == "" and log_cause(tmp_path / "missing.out") == ""


def test_a_nodes_python_without_pytest_or_the_plugin_is_named():
    import re

    from pytest_gpuverify.slurm.launcher import CAUSE_LINE

    assert CAUSE_LINE.match("/usr/bin/python3: No module named pytest")
    usage = (
        "ERROR: usage: __main__.py [options]\n__main__.py: error: unrecognized arguments: --gpu-verify\n  rootdir: /r"
    )
    assert [line for line in usage.splitlines() if CAUSE_LINE.match(line)][-1].endswith("--gpu-verify")
    assert not re.match(CAUSE_LINE, "collected 1 item")
