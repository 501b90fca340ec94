"""One guard per session (real processes, real locks): it guards every command the session arms,
lets a command it was told is done alone, and after the session's death stops the rest before
their locks go."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from pytest_gpuverify.lease.guard import SessionGuard
from pytest_gpuverify.lease.lock import GpuLease


def flock_free(path) -> bool:
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def command() -> subprocess.Popen:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    threading.Thread(target=proc.wait, daemon=True).start()  # reaped as init would reap it
    return proc


def lose_without_unlock(lease: GpuLease) -> None:
    """The session dies: its descriptor closes without an unlock."""
    lease._fd, fd = None, lease.fileno()
    os.close(fd)


def test_one_guard_process_guards_many_commands(tmp_path):
    guard = SessionGuard.start()
    assert guard is not None
    leases, commands = [], []
    try:
        for i in range(3):
            lease = GpuLease(tmp_path / f"gpu-{i}.lock", i)
            assert lease.try_acquire()
            leases.append(lease)
            commands.append(command())
        ids = [guard.arm(["host", str(c.pid)], [lease.fileno()]) for c, lease in zip(commands, leases)]
        assert all(ids) and len(set(ids)) == 3
        guard.disarm(ids[0])  # command 0 is over (as far as the session says)
        leases[0].release()
        assert flock_free(leases[0].path)
        for lease in leases[1:]:
            lose_without_unlock(lease)
        for lease in leases[1:]:
            assert not flock_free(lease.path), "the guard holds the armed commands' locks"
        guard.proc.stdin.close()  # the session's end of the channel goes, as when it is killed
        assert guard.proc.wait(timeout=30) == 0
        for c in commands[1:]:
            deadline = time.monotonic() + 5
            while c.returncode is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert c.returncode == -15, "an armed command is stopped with SIGTERM"
        assert commands[0].returncode is None, "a command the guard was told is done is left alone"
        for lease in leases[1:]:
            assert flock_free(lease.path), "the locks went with the guard, after the commands"
    finally:
        for c in commands:
            c.kill()


@pytest.fixture
def one_command(tmp_path):
    """A session's guard, one GPU lock it holds, and a command of its own; the command killed after."""
    guard = SessionGuard.start()
    assert guard is not None
    lease = GpuLease(tmp_path / "gpu-0.lock", 0)
    assert lease.try_acquire()
    c = command()
    yield guard, lease, c
    c.kill()
    lease.release()


def test_a_session_that_ends_normally_leaves_everything_alone(one_command):
    guard, lease, c = one_command
    guard.disarm(guard.arm(["host", str(c.pid)], [lease.fileno()]))
    guard.close()  # nothing armed: not waited for; the watchdog exits on its own, doing nothing
    assert guard.proc.wait(timeout=10) == 0 and c.poll() is None
    assert not flock_free(lease.path), "the session still holds its lock"
    lease.release()
    assert flock_free(lease.path)


def test_closing_with_a_command_still_armed_waits_for_its_stop(one_command):
    """A session that ends with a command armed (it never said done): close() returns once the
    watchdog has stopped it, not before."""
    guard, lease, c = one_command
    guard.arm(["host", str(c.pid)], [lease.fileno()])
    guard.close()
    assert guard.proc.returncode == 0, "close() returned before the watchdog was done"
    assert c.wait(timeout=1) is not None
