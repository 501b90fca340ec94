"""RunGuard with real processes: a session that says done leaves its command alone; a session that
dies without saying it gets its command stopped, and its lock is held until then."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from pytest_gpuverify.lease.guard import RunGuard
from pytest_gpuverify.lease.lock import GpuLease


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split(")")[-1].split()[0] != "Z"  # a zombie has stopped already


def flock_free(path) -> bool:
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def test_done_leaves_the_command_and_the_lock_alone(tmp_path):
    command = subprocess.Popen(["sleep", "30"], start_new_session=True)
    lease = GpuLease(tmp_path / "gpu-0.lock", 0)
    assert lease.try_acquire()
    try:
        guard = RunGuard.start(["host", str(command.pid)], [lease.fileno()])
        assert guard is not None
        guard.done()
        assert guard.proc.wait(timeout=30) == 0
        assert alive(command.pid), "a guard told done stops nothing"
        lease.release()
        assert flock_free(lease.path), "the session's release unlocks, whatever the guard held"
    finally:
        command.kill()
        command.wait()


def test_a_session_gone_without_done_gets_its_command_stopped(tmp_path):
    command = subprocess.Popen(["sleep", "30"], start_new_session=True)
    # reaped as soon as it ends, as init reaps a dead session's command (a zombie still counts as there)
    reaper = threading.Thread(target=command.wait, daemon=True)
    reaper.start()
    lease = GpuLease(tmp_path / "gpu-0.lock", 0)
    assert lease.try_acquire()
    guard = RunGuard.start(["host", str(command.pid)], [lease.fileno()])
    assert guard is not None
    lease._fd, fd = None, lease.fileno()  # the session dies: its descriptors close without an unlock
    os.close(fd)
    assert not flock_free(lease.path), "the guard holds the lock"
    guard.proc.stdin.close()  # the pipe ends without done, as when the session is killed
    assert guard.proc.wait(timeout=30) == 0
    reaper.join(timeout=5)
    assert command.returncode == -15, "stopped with SIGTERM"
    deadline = time.monotonic() + 5
    while not flock_free(lease.path) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flock_free(lease.path), "the lock went with the guard"
