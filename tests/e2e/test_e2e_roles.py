"""The role of each process (face/roles.py): chosen once, the engine built only where targets run,
the role's plugin registered from pytest_configure to pytest_unconfigure.

What each process did is written by a small plugin of the test's own (``-p gv_roles_spy``, loaded by
the controller and, from the same arguments, by every xdist worker): each VerifySession built, the
registered role at the session's end, and what is still registered after pytest_unconfigure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

SPY = """
import json, os
import pytest
from pytest_gpuverify.engine import session

def record(**fields):
    fields.update(pid=os.getpid(), worker=os.environ.get("PYTEST_XDIST_WORKER", ""))
    with open(os.environ["GV_ROLES_SPY_LOG"], "a") as log:
        log.write(json.dumps(fields) + "\\n")

built = session.VerifySession.__init__

def counted(self, *args, **kwargs):
    record(event="engine")
    built(self, *args, **kwargs)

session.VerifySession.__init__ = counted

def pytest_sessionfinish(session):
    role = session.config.pluginmanager.get_plugin("gpuverify-role")
    record(event="sessionfinish", role=type(role).__name__ if role is not None else None)

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    names = [name for name, _ in config.pluginmanager.list_name_plugin() if name.startswith("gpuverify-")]
    record(event="unconfigure", left=names)
"""

TARGETS = ("op_tests/test_gemm_a8w8.py", "op_tests/test_rmsnorm2d.py")


def run_with_spy(sandbox, tmp_path: Path, *args: str):
    (tmp_path / "spy").mkdir()
    (tmp_path / "spy" / "gv_roles_spy.py").write_text(SPY, encoding="utf-8")
    log = tmp_path / "spy.jsonl"
    path = os.pathsep.join(p for p in (str(tmp_path / "spy"), os.environ.get("PYTHONPATH", "")) if p)
    proc = sandbox.pytest("-p", "gv_roles_spy", *args, env={"GV_ROLES_SPY_LOG": str(log), "PYTHONPATH": path})
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, events


def test_xdist_controller_builds_no_engine_and_each_role_leaves_at_unconfigure(sandbox, tmp_path):
    proc, events = run_with_spy(sandbox, tmp_path, "-n", "2", *TARGETS)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, out[-3000:]
    assert {sandbox.artifact(t).verdict for t in ("gemm_a8w8", "rmsnorm2d")} == {"PASS"}
    controller = [e for e in events if not e["worker"]]
    workers = [e for e in events if e["worker"]]
    assert [e["event"] for e in controller] == ["sessionfinish", "unconfigure"], controller
    assert controller[0]["role"] == "DistController"
    engines = [e for e in workers if e["event"] == "engine"]
    assert sorted(e["worker"] for e in engines) == ["gw0", "gw1"], "one engine per worker, none on the controller"
    assert {e["role"] for e in workers if e["event"] == "sessionfinish"} == {"DistWorker"}
    unconfigured = [e for e in events if e["event"] == "unconfigure"]
    assert len(unconfigured) == 3 and all(e["left"] == [] for e in unconfigured), unconfigured
    assert "gpuverify =" in out and out.count("PASS ") >= 2, "the controller still prints the summary"


def test_one_session_builds_its_engine_here_and_leaves_at_unconfigure(sandbox, tmp_path):
    proc, events = run_with_spy(sandbox, tmp_path, TARGETS[0])
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, out[-3000:]
    assert [(e["event"], e["worker"]) for e in events] == [("engine", ""), ("sessionfinish", ""), ("unconfigure", "")]
    assert events[1]["role"] == "Central"
    assert events[2]["left"] == []


def test_a_bad_setup_under_xdist_stops_on_the_controller_before_any_worker(sandbox, tmp_path):
    proc, events = run_with_spy(sandbox, tmp_path, "-n", "2", "--gpu-host", "nosuch", TARGETS[0])
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, err
    assert "nosuch" in err and "Fix:" in err, err
    assert not [e for e in events if e["event"] == "engine"], "the controller checks the setup without an engine"
    assert not [e for e in events if e["worker"]], "no worker started"


FULL_DISK = """
import errno
from pytest_gpuverify.engine import run

def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

run.seal_log = full_disk
"""


def test_a_log_that_cannot_be_sealed_still_gets_its_artifact_and_no_pass(sandbox, tmp_path):
    """The disk fills as the raw log's trailer is written: the target's artifact is still written,
    INCONCLUSIVE with the reason (the failure escaped the verdict: no artifact for the target)."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "gv_full_disk.py").write_text(FULL_DISK, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(tmp_path / "plug"), os.environ.get("PYTHONPATH", "")) if p)
    proc = sandbox.pytest("-p", "gv_full_disk", TARGETS[0], env={"PYTHONPATH": path})
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode != 0, out[-3000:]
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE", art.reasons
    assert any("could not be sealed" in r and "No space left" in r for r in art.reasons), art.reasons
    assert art.run is not None and art.run.ran and art.raw_output
