"""GpuLease against real flock(1) users of the same path."""

import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_gpuverify.lease.lock import GpuLease, LockError, held_lock_ids, is_locked_elsewhere, lock_id


def flock_n(path) -> int:
    """What a foreign `flock -n` on the path gets: 0 free, 1 held."""
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode


def test_lease_excludes_flock_and_is_released(tmp_path):
    path = tmp_path / "gpu-0.lock"
    lease = GpuLease(path, 0)
    assert lease.try_acquire()
    assert flock_n(path) == 1
    assert is_locked_elsewhere(path)
    lease.release()
    assert flock_n(path) == 0
    assert not is_locked_elsewhere(path)
    assert path.exists(), "lock files are never deleted"


def test_flock_holder_excludes_lease(tmp_path):
    path = tmp_path / "gpu-1.lock"
    # -o: sleep does not keep it; killed below, so a slow machine never sees the lock go early. Its
    # own group: flock's child holds the lock's fd from fork to its close before exec, so a kill of
    # flock alone on a loaded machine could leave the lock held a moment longer (seen in a full run)
    holder = subprocess.Popen(["flock", "-x", "-o", str(path), "sleep", "120"], start_new_session=True)
    try:
        # watched through /proc/locks, not probed: a probe that takes the lock for a moment, again and
        # again, can keep a waiting holder from it on a loaded machine (seen once at load 15)
        deadline = time.time() + 30
        while lock_id(path) not in (held_lock_ids() or set()) and time.time() < deadline:
            time.sleep(0.02)
        assert flock_n(path) == 1, "the flock(1) holder never took the lock"
        lease = GpuLease(path, 1)
        assert not lease.try_acquire()
        assert not lease.held
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    assert GpuLease(path, 1).try_acquire()


def test_two_leases_in_one_process_conflict(tmp_path):
    path = tmp_path / "gpu-2.lock"
    a, b = GpuLease(path, 2), GpuLease(path, 2)
    assert a.try_acquire()
    assert not b.try_acquire()
    a.release()
    assert b.try_acquire()
    b.release()


def test_lock_fd_is_not_inherited_by_children(tmp_path):
    path = tmp_path / "gpu-3.lock"
    lease = GpuLease(path, 3)
    assert lease.try_acquire()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        lease.release()
        assert flock_n(path) == 0, "a child process must not keep the GPU locked"
    finally:
        child.kill()
        child.wait()


def test_kill_9_of_holder_frees_lock(tmp_path):
    path = tmp_path / "gpu-4.lock"
    code = (
        "import sys, time; from pytest_gpuverify.lease.lock import GpuLease; "
        f"l = GpuLease({str(path)!r}, 4); assert l.try_acquire(); print('held', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"
    assert flock_n(path) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert flock_n(path) == 0


def test_missing_lock_dir_names_path_and_fix(tmp_path):
    lease = GpuLease(tmp_path / "nope" / "gpu-0.lock", 0)
    with pytest.raises(LockError) as err:
        lease.try_acquire()
    assert "nope" in str(err.value) and "Fix:" in str(err.value)
