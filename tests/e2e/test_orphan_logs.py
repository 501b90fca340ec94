"""A run killed before it wrote its artifact leaves a raw log no artifact claims: the next session's
summary, `gpuverify check DIR` and `gpuverify handoff` name it."""

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
from pytest_gpuverify.records.artifact import Artifact, Correctness, write_artifact
from pytest_gpuverify.engine.orphans import orphan_logs


def test_logs_named_by_an_artifact_are_not_orphans(tmp_path):
    (tmp_path / "bench_x.20260101T000000Z.log").write_text("run 1\n")
    (tmp_path / "bench_x.20260102T000000Z.log").write_text("run 2, killed\n")
    (tmp_path / "build_make.20260101T000000Z.log").write_text("built\n")
    art = Artifact(topic="x", ts="2026-01-01T00:00:00Z", raw_output="bench_x.20260101T000000Z.log")
    art.builds = []
    write_artifact(art, tmp_path / "bench_x.20260101T000001Z.json")  # moved aside: still a claim
    assert [p.name for p in orphan_logs(tmp_path)] == ["bench_x.20260102T000000Z.log",
                                                       "build_make.20260101T000000Z.log"]
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
    check = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(ticket)],
                           capture_output=True, text=True, env=dict(os.environ))
    assert f"ORPHAN {log}: a raw log no artifact names" in check.stdout, check.stdout + check.stderr
    handoff = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "handoff", "."], cwd=ticket,
                             capture_output=True, text=True)
    assert handoff.returncode == 0, handoff.stderr
    doc = json.loads(handoff.stdout)
    assert doc["salientSummary"].startswith("1 artifact(s) in T-1: "), doc["salientSummary"]
    assert any(issue.startswith(f"{log.name}: a raw log no artifact names") for issue in doc["discoveredIssues"])
