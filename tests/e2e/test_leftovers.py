"""A released lock means the GPU is free: what a run leaves running is stopped before the release."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kernel_repos import sim_env, verify_argv

from pytest_gpuverify.execute.leftovers import MARKER, parse_report, proc_pids, reason, stop_marked

# The detached child of the op_test below. On SIGTERM it notes whether its GPU's lock was still held
# (it tries the lock itself: taking it means the session had let it go), then exits.
CHILD = r"""
import fcntl, os, signal, sys, time
probe, lock = sys.argv[1], sys.argv[2]
def on_term(*_):
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        state = "free"
    except OSError:
        state = "held"
    with open(probe + ".term", "w") as fh:
        fh.write(state)
    os._exit(0)
signal.signal(signal.SIGTERM, on_term)
with open(probe + ".pid", "w") as fh:
    fh.write(str(os.getpid()))
print("daemon up", flush=True)
while True:
    time.sleep(1)
"""

OP_TEST = """
# Passes its check, and leaves a detached child running on the GPU (a daemon of its own session that
# keeps the command's stdout).
import os, subprocess, sys, time
import aiter
from aiter import logger

aiter.report_environment()
probe, locks = {probe!r}, {locks!r}
gpu = os.environ["HIP_VISIBLE_DEVICES"].split(",")[0]
subprocess.Popen([sys.executable, "-c", {child!r}, probe, f"{{locks}}/gpu-{{gpu}}.lock"], start_new_session=True)
while not os.path.exists(probe + ".pid"):
    time.sleep(0.05)
logger.info("[perf] dim: (4, 32, 8192)      dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, "
            "uplift: 157.0%[checkAllclose atol=0.01 rtol=0.01 \\033[32mpassed~\\033[0m]")
"""


def text(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


SLEEP_TAIL = """
print("sleeping", flush=True)
time.sleep(600)
"""


def _add_op_test(sandbox, probe: Path, name: str = "daemon", tail: str = "") -> None:
    source = OP_TEST.format(probe=str(probe), locks=str(sandbox.spec.locks), child=CHILD) + tail
    (sandbox.repo / "op_tests" / f"test_{name}.py").write_text(source)
    subprocess.run(["git", "-C", str(sandbox.repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "daemon"],
        check=True,
    )


def _assert_stopped_before_release(sandbox, probe: Path) -> None:
    art = sandbox.artifact("daemon")
    assert art.verdict == "INCONCLUSIVE", (art.verdict, art.reasons)
    pid = int(Path(str(probe) + ".pid").read_text())
    assert art.run.leftovers and art.run.leftovers[0].split()[0].isdigit(), art.run
    assert len(art.run.leftovers) == 1 and "-c" in art.run.leftovers[0], art.run.leftovers
    assert any(r.startswith("left 1 processes running") for r in art.reasons), art.reasons
    assert Path(str(probe) + ".term").read_text() == "held", "the child was stopped after the GPU's lock was released"
    assert art.correctness.passed, "the command's own result is still read"
    assert sandbox.lock_files_free()
    return pid


def _container_with_probe(sandbox) -> tuple[str, Path]:
    """A container that also mounts the lock folder and a probe folder at their host paths."""
    probe_dir = sandbox.root / "probe"
    probe_dir.mkdir()
    name = f"gv-test-{uuid.uuid4().hex[:8]}"
    sandbox.start_container(
        name,
        mounts={
            str(sandbox.repo): "/workspace/aiter",
            str(sandbox.spec.locks): str(sandbox.spec.locks),
            str(probe_dir): str(probe_dir),
        },
    )
    sandbox.rewrite_env(
        repo_rows=[("aiter", sandbox.repo, name, "/workspace/aiter")],
        containers=[(name, sandbox.spec.containers[0][1])],
    )
    return name, probe_dir / "child"


def _child_runs_in(sandbox, name: str) -> bool:
    c = sandbox.client.containers.get(name)
    ps = c.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"]).output.decode()
    assert "infinity" in ps, f"could not list the container's processes: {ps!r}"
    return "fcntl" in ps  # CHILD's source is its command line


@pytest.mark.docker
def test_a_detached_child_in_the_container_is_stopped_before_the_lock_goes(sandbox):
    name, probe = _container_with_probe(sandbox)
    _add_op_test(sandbox, probe)
    proc = sandbox.pytest("op_tests/test_daemon.py", "--gpu-timeout", "120")
    _assert_stopped_before_release(sandbox, probe)
    assert not _child_runs_in(sandbox, name), f"the child still runs in the container\n{text(proc)[-2000:]}"


def _kill_9_while_running(sandbox, probe: Path, *args: str) -> None:
    """pytest on op_tests/test_daemonsleep.py, kill -9'd once its command sleeps beside its child;
    returns when the GPU's lock is free again."""
    cmd = verify_argv(sandbox, "op_tests/test_daemonsleep.py", *args)
    proc = subprocess.Popen(
        cmd,
        cwd=sandbox.repo,
        env=sim_env(sandbox),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while not (
        Path(str(probe) + ".pid").exists()
        and any(b"sleeping" in p.read_bytes() for p in (sandbox.tickets / "T-1").glob("bench_daemonsleep.*.log"))
    ):
        assert time.time() < deadline and proc.poll() is None, "the target never started"
        time.sleep(0.1)
    assert not sandbox.lock_files_free()
    proc.kill()
    proc.wait()
    deadline = time.time() + 60
    while not sandbox.lock_files_free():
        assert time.time() < deadline, "the GPU's lock was never released"
        time.sleep(0.05)


@pytest.mark.docker
def test_kill_9_of_pytest_stops_a_detached_child_in_the_container_before_the_lock_goes(sandbox):
    name, probe = _container_with_probe(sandbox)
    _add_op_test(sandbox, probe, "daemonsleep", SLEEP_TAIL)
    _kill_9_while_running(sandbox, probe)
    assert Path(str(probe) + ".term").read_text() == "held", "the guard let the lock go before the child was stopped"
    assert not _child_runs_in(sandbox, name)


@pytest.mark.docker
def test_kill_9_of_pytest_stops_a_detached_child_on_the_host_before_the_lock_goes(sandbox):
    probe = sandbox.root / "child"
    _add_op_test(sandbox, probe, "daemonsleep", SLEEP_TAIL)
    _kill_9_while_running(sandbox, probe, "--gpu-container", "none")
    assert Path(str(probe) + ".term").read_text() == "held", "the guard let the lock go before the child was stopped"
    assert not _alive(int(Path(str(probe) + ".pid").read_text()))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.docker
def test_a_detached_child_on_the_host_is_stopped_and_nothing_else_is(sandbox):
    probe = sandbox.root / "child"
    _add_op_test(sandbox, probe)
    # a process the run did not start, with the very command line of the leftover: never touched
    bystander = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(sandbox.root / "other"), "/dev/null"], start_new_session=True
    )
    try:
        proc = sandbox.pytest("op_tests/test_daemon.py", "--gpu-container", "none", "--gpu-timeout", "120")
        pid = _assert_stopped_before_release(sandbox, probe)
        assert not _alive(pid), f"the child {pid} still runs\n{text(proc)[-2000:]}"
        assert bystander.poll() is None, "a process the run did not start was stopped"
    finally:
        bystander.kill()
        bystander.wait()


def test_stop_marked_stops_only_the_runs_processes_term_then_kill(tmp_path):
    run_id = uuid.uuid4().hex
    before = proc_pids()
    env = dict(os.environ, **{MARKER: run_id})
    polite = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time\nsignal.signal(signal.SIGTERM, "
            "signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(300)",
        ],
        env=env,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    other = subprocess.Popen(["sleep", "300"], env=dict(env, **{MARKER: "another-run"}), start_new_session=True)
    try:
        assert stubborn.stdout.readline() == b"up\n"
        found = stop_marked(run_id, before, grace_s=0.5)
        assert sorted(int(f.split()[0]) for f in found) == sorted([polite.pid, stubborn.pid]), found
        assert polite.wait(timeout=10) == -signal.SIGTERM
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None, "another run's process is not ours to stop"
        assert stop_marked(run_id, before) == []
    finally:
        for p in (polite, stubborn, other):
            p.kill()
            p.wait()


def test_the_wrappers_report_is_read_and_the_rest_kept():
    found, rest = parse_report("gpuverify-left 42 python3 -c x\nsh: 1: oops\ngpuverify-left 43 sleep 9\n")
    assert found == ["42 python3 -c x", "43 sleep 9"] and rest == "sh: 1: oops\n"
    assert reason(found).startswith("left 2 processes running after the command ended (42 python3 -c x; 43 sleep 9)")


def test_a_pass_with_leftovers_is_inconclusive_and_check_re_derives_it():
    from pytest_gpuverify.engine.verdict import verdict_and_reasons
    from pytest_gpuverify.parsers.result import ParsedOutput
    from pytest_gpuverify.records.artifact import Correctness, RunRecord

    parsed = ParsedOutput(parser="aiter", correctness=Correctness(passed=True, shapes_checked=1))
    facts = RunRecord(ran=True, exit_code=0)
    assert verdict_and_reasons(facts, parsed)[0] == "PASS"
    facts.leftovers = ["42 sleep 300"]
    verdict, reasons = verdict_and_reasons(facts, parsed)
    assert verdict == "INCONCLUSIVE" and reasons[0].startswith("left 1 processes running")
    again = RunRecord.model_validate_json(facts.model_dump_json())
    assert again.leftovers == ["42 sleep 300"]
