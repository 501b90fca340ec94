"""A run killed before it wrote its artifact leaves a raw log no artifact claims: the next session's
summary, `gpuverify check DIR` and `gpuverify handoff` name it as stopped, with its last line; a log a
live session (this machine's or a concurrent one) still writes is named as running, never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_gpuverify.cli.handoff import observation
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.engine.orphans import orphan_logs, unclaimed_logs
from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.records.artifact import Artifact, Correctness


def test_logs_named_by_an_artifact_are_not_orphans(tmp_path):
    (tmp_path / "bench_x.20260101T000000Z.log").write_text("run 1\n")
    (tmp_path / "bench_x.20260102T000000Z.log").write_text("run 2, killed\n")
    (tmp_path / "build_make.20260101T000000Z.log").write_text("built\n")
    art = Artifact(topic="x", ts="2026-01-01T00:00:00Z", raw_output="bench_x.20260101T000000Z.log")
    art.builds = []
    store_artifact(art, tmp_path / "bench_x.20260101T000001Z.json", None)  # moved aside: still a claim
    assert [u.log.name for u in orphan_logs(tmp_path)] == [
        "bench_x.20260102T000000Z.log",
        "build_make.20260101T000000Z.log",
    ]
    assert orphan_logs(tmp_path, before=time.time() - 3600) == [], "a log written since is a running session's"


def test_handoff_says_1_shape_checked():
    art = Artifact(topic="x", ts="t", verdict="PASS", correctness=Correctness(shapes_checked=1))
    assert "; 1 shape checked" in observation(art) and "shapes" not in observation(art)


def test_handoff_of_a_folder_without_artifacts_exits_2_like_check(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert main(["handoff", str(tmp_path)]) == 2
    assert f"no artifact (bench_*.json) in {tmp_path}" in capsys.readouterr().err


@pytest.mark.docker
def test_a_killed_runs_log_is_listed_by_the_next_session_check_and_handoff(sandbox):
    proc = sandbox.start_sleeper()
    proc.send_signal(signal.SIGKILL)  # no artifact is written: only the raw log stays
    proc.wait(timeout=30)
    ticket = sandbox.tickets / "T-1"
    [log] = ticket.glob("bench_sleep.*.log")
    time.sleep(1.1)  # the guard stops the command: its last lines land in the log
    nxt = sandbox.pytest("op_tests/test_rmsnorm2d.py")
    text = nxt.stdout.decode(errors="replace")
    assert f"gpuverify: {log}: a raw log no artifact names" in text, text[-3000:]
    check = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(ticket)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert f"STOPPED {log}: a raw log no artifact names" in check.stdout, check.stdout + check.stderr
    handoff = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "handoff", "."], cwd=ticket, capture_output=True, text=True
    )
    assert handoff.returncode == 0, handoff.stderr
    doc = json.loads(handoff.stdout)
    assert doc["salientSummary"].startswith("1 artifact(s) in T-1: "), doc["salientSummary"]
    assert any(issue.startswith(f"{log.name}: a raw log no artifact names") for issue in doc["discoveredIssues"])


HOLDER = """
import sys, time
from pathlib import Path
from pytest_gpuverify.common import live_files
log = Path(sys.argv[1])
log.write_text("step 1 of 3\\nstep 2 of 3\\n")
live_files.hold(log)
print("held", flush=True)
time.sleep(600)
"""


def test_a_log_a_live_session_holds_is_running_and_stopped_once_its_session_is_killed(tmp_path, capsys):
    log = tmp_path / "bench_x.20260101T000000Z.log"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(log)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        [running] = unclaimed_logs(tmp_path)
        assert running.live and running.holder == holder.pid and orphan_logs(tmp_path) == []
        assert main(["check", str(tmp_path)]) == 2  # no artifact: the folder's logs are listed all the same
        out = capsys.readouterr().out
        assert out == f"RUNNING {log}: no artifact yet: its session is still running (pid {holder.pid} holds the log)\n"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    [stopped] = unclaimed_logs(tmp_path)
    assert not stopped.live and stopped.cause == "last line: 'step 2 of 3'"
    assert main(["check", str(tmp_path)]) == 2
    assert capsys.readouterr().out == (
        f"STOPPED {log}: a raw log no artifact names: its run stopped before it wrote "
        "its artifact (last line: 'step 2 of 3')\n"
    )


def test_a_stopped_log_the_engine_sealed_says_how_its_command_ended(tmp_path):
    from pytest_gpuverify.records.raw_log import append_trailer, trailer_fields

    log = tmp_path / "bench_x.20260101T000000Z.log"
    log.write_text("done\n")
    append_trailer(
        log,
        trailer_fields(
            exit_code=3,
            timed_out=False,
            interrupted=None,
            container_died=False,
            host="h",
            container=None,
            gpus=[0],
            timeline=None,
        ),
    )
    assert (
        orphan_logs(tmp_path)[0].cause == "the command had ended (exit code 3); the session stopped before the artifact"
    )
    empty = tmp_path / "bench_y.20260101T000000Z.log"
    empty.write_text("")
    assert [u.cause for u in orphan_logs(tmp_path)][1] == "its log is empty: the command printed nothing"


def test_the_controllers_artifact_of_a_target_that_never_ran_is_no_old_file(tmp_path, capsys):
    """An INCONCLUSIVE artifact the controller wrote for a target no host or job ran has no timeline
    because it held no GPU, not because it is old: check says nothing about its age."""
    from pytest_gpuverify.remote.unran import write_unran

    path, problem = write_unran(
        tmp_path / "T-1", None, "op_tests/test_x.py::x", "-", "never submitted to Slurm: x", "T-1"
    )
    assert problem == "" and path is not None
    assert main(["check", str(tmp_path / "T-1")]) == 0
    out = capsys.readouterr().out
    assert "written before" not in out and "old artifact" not in out and f"{path}: OK (" in out, out
