"""The background sampler (readings_daemon.py) on the simulated ROCm host: started on demand by
the first session, nobody's child, one per key; a later session's first window comes from its
history at once, judged by the same rules (load under a lock is the holder's); it leaves when
nobody reads it. And `gpuverify doctor` says which applies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_gpuverify.config.envfile import parse_lock_prefix
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.readings_daemon import history_path
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.lease.shared_readings import SharedReadings
from pytest_gpuverify.lease.window_history import DAEMON, WINDOW, daemon_history, history_source
from pytest_gpuverify.simulator import SimState, install, load_state, save_state


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(check, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@pytest.fixture
def host(tmp_path, monkeypatch):
    sim = tmp_path / "sim"
    state_path = install(sim, SimState.idle(gpus=3))
    # the daemon inherits the session's environment: the simulated tools (not its amdsmi library:
    # loaded in this process, it would stay bound to this test's host for the tests after it)
    monkeypatch.setenv("PATH", f"{sim}:{os.environ['PATH']}")
    monkeypatch.setenv("GPUVERIFY_SAMPLER_IDLE_S", "3")
    (tmp_path / "locks").mkdir()
    lock = parse_lock_prefix(f"flock -w 600 {tmp_path}/locks/gpu-<id>.lock")
    shared = SharedReadings("test-host|" + lock.path_template, max_age_s=0.18, directory=tmp_path)
    pids = []

    class Host:
        backend = RocmBackend(LocalHost(), use_library=False)

        def source(self):
            return history_source(self.backend, shared.path, "gfx942", lock.path_template, 0.2)

        def sampler(self, window=1.0):
            return IdleSampler(
                self.backend, window, interval_s=0.2, lock_path_for=lock.path_for, shared=shared, history=self.source()
            )

        def edit(self, fn):
            state = load_state(state_path)
            fn(state)
            save_state(state, state_path)

        def daemon_pid(self):
            try:
                pid = json.loads(history_path(shared.path).read_bytes())["pid"]
            except (OSError, ValueError, KeyError):
                return None
            pids.append(pid)
            return pid

    h = Host()
    h.shared, h.lock = shared, lock
    yield h
    for pid in set(pids):
        if alive(pid):
            os.kill(pid, 9)


def test_the_first_session_pays_the_window_the_next_one_does_not(host):
    first = host.sampler()
    first.start()
    try:
        assert first.window_source == WINDOW and "a background sampler starts" in first.window_note
        assert not first.wait_for_full_window(timeout=0.1), "the first session samples its window"
    finally:
        first.stop()
    pid = wait_for(host.daemon_pid)
    assert pid and alive(pid)
    assert os.getppid() != pid and os.getsid(pid) != os.getsid(0), "nobody's child, in no session of ours"
    with open(f"/proc/{pid}/stat") as fh:
        assert int(fh.read().split(")")[-1].split()[1]) != os.getpid(), "not our child"
    host.edit(lambda s: s.set_busy(1))
    holder = subprocess.Popen(["flock", "-x", "-o", str(host.lock.path_for(2)), "sleep", "30"])
    try:
        time.sleep(0.3)
        host.edit(lambda s: s.set_busy(2))  # load under someone's lock is that holder's
        assert wait_for(lambda: daemon_history(host.shared.path, 1.0, 0.2)[0] is not None), "no history of a window"
        second = host.sampler()
        t0 = time.monotonic()
        second.start()
        try:
            assert second.window_source == DAEMON and second.window_note is None
            assert second.wait_for_full_window(timeout=0.05) and time.monotonic() - t0 < 1.0
            verdict = second.judge_window()
            assert 1 in verdict.busy and 0 in verdict.idle, verdict
            assert 2 in verdict.idle, "the history knew GPU 2's load was under its lock"
        finally:
            second.stop()
    finally:
        holder.kill()
        holder.wait()
    assert host.daemon_pid() == pid, "still the one daemon"


def test_one_daemon_per_key_and_it_leaves_when_nobody_reads(host):
    first = host.sampler()
    first.start()
    first.stop()
    pid = wait_for(host.daemon_pid)
    assert pid
    host.source()(1.0)  # a second session: it finds the daemon
    from pytest_gpuverify.lease.window_history import RUNNING, start_background_sampler

    assert start_background_sampler(host.shared.path, "gfx942", host.lock.path_template, 0.2, 1.0) == RUNNING
    assert daemons(host) == [str(pid)], "a session that finds the daemon's lock held starts no process"
    assert wait_for(lambda: not alive(pid), timeout_s=20), "it exits after the idle time without a reader"
    assert not history_path(host.shared.path).exists(), "and takes its history with it"


def daemons(host) -> list[str]:
    """The live readings daemons of ``host``'s key (any process of that command line, loser or not),
    less a daemon's own child between its fork and its exec (a GPU tool starting), which has its
    parent's command line for that moment."""
    found: dict[str, str] = {}  # pid -> parent pid
    for p in os.listdir("/proc"):
        try:
            cmdline = open(f"/proc/{p}/cmdline", "rb").read()
            parent = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if (
            p.isdigit()
            and b"readings_daemon" in cmdline
            and str(host.shared.path).encode() in cmdline
            and alive(int(p))
        ):
            found[p] = parent
    return sorted(p for p, parent in found.items() if parent not in found)


def test_sessions_starting_at_once_start_one_daemon(host):
    """Workers of one host start together: the first takes the key's lock and hands it to the daemon it
    starts; the others find it held and start nothing (before, each started a daemon that ended after
    its imports, a start's CPU each on a host busy starting its workers)."""
    from concurrent.futures import ThreadPoolExecutor

    from pytest_gpuverify.lease.window_history import RUNNING, STARTED, start_background_sampler

    with ThreadPoolExecutor(6) as pool:
        said = list(
            pool.map(
                lambda _: start_background_sampler(host.shared.path, "gfx942", host.lock.path_template, 0.2, 1.0),
                range(6),
            )
        )
    assert sorted(said) == sorted([STARTED] + [RUNNING] * 5), said
    pid = wait_for(host.daemon_pid)
    assert pid and daemons(host) == [str(pid)], daemons(host)
    time.sleep(0.5)
    assert daemons(host) == [str(pid)], "no second daemon came up"
    assert start_background_sampler(host.shared.path, "gfx942", host.lock.path_template, 0.2, 1.0) == RUNNING
    os.kill(pid, 9)
    assert wait_for(lambda: not alive(pid))
    assert wait_for(
        lambda: start_background_sampler(host.shared.path, "gfx942", host.lock.path_template, 0.2, 1.0) == STARTED
    ), "a killed daemon's lock went with it"
    new = wait_for(lambda: (lambda p: p if p and p != pid else None)(host.daemon_pid()))
    assert new
    os.kill(new, 9)


@pytest.mark.docker
def test_doctor_says_which_applies(sandbox):
    env = dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}", GPUVERIFY_SAMPLER_IDLE_S="30")

    def window_line() -> str:
        out = subprocess.run(
            [sys.executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(sandbox.env_path)],
            capture_output=True,
            env=env,
        ).stdout.decode()
        return next(line for line in out.splitlines() if line.startswith("window"))

    assert window_line().startswith("window    window: the first pick of a session waits 2 s")
    sandbox.pytest(
        "op_tests/test_rmsnorm2d.py", "--gpu-container", "none", window="2", env={"GPUVERIFY_SAMPLER_IDLE_S": "30"}
    )
    line = wait_for(lambda: (lambda ln: ln if "background sampler (pid" in ln else None)(window_line()))
    assert line and "the first pick reads its last 2 s at once" in line
    os.kill(int(line.split("(pid ")[1].split(")")[0]), 9)  # this test's host is gone with the test
