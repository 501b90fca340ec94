"""Waiting for a held GPU lock by blocking on it (real flock(1) holders, real /proc/locks)."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from pytest_gpuverify.config.envfile import parse_lock_prefix
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.lockwait import LockWaiters
from pytest_gpuverify.lease.picker import GpuPicker
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.simulator import SimState, install


def flock_free(path) -> bool:
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def hold(path) -> subprocess.Popen:
    proc = subprocess.Popen(["flock", "-x", "-o", str(path), "sleep", "60"])
    deadline = time.monotonic() + 10
    while flock_free(path):
        assert time.monotonic() < deadline, "flock(1) never took the lock"
        time.sleep(0.02)
    return proc


def blocked_waiters(path) -> list[str]:
    """/proc/locks lines of this process waiting ("->") for a flock on ``path``."""
    st = os.stat(path)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as fh:
        return [ln for ln in fh if "->" in ln and "FLOCK" in ln and ident in ln and f" {os.getpid()} " in ln]


def wait_until(check, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def our_fds_on(path) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                out.append(fd)
        except OSError:
            continue
    return out


def test_a_waiter_blocks_on_the_lock_and_wins_it_when_let_go(tmp_path):
    path = tmp_path / "gpu-0.lock"
    holder = hold(path)
    waiters = LockWaiters()
    try:
        waiters.wait_on(0, path)
        assert wait_until(lambda: bool(blocked_waiters(path))), "the waiter is not blocked in flock"
        assert waiters.next_won(0.1) is None
        holder.kill()
        holder.wait()
        lease = waiters.next_won(10)
        assert lease is not None and lease.held and lease.gpu_index == 0 and lease.acquired_at
        assert not flock_free(path), "the won lease holds the lock"
        lease.release()
        assert flock_free(path)
    finally:
        waiters.cancel()
        holder.kill()
        holder.wait()


def test_a_cancelled_waiter_never_keeps_the_lock(tmp_path):
    path = tmp_path / "gpu-0.lock"
    holder = hold(path)
    waiters = LockWaiters()
    try:
        waiters.wait_on(0, path)
        assert wait_until(lambda: bool(blocked_waiters(path)))
        waiters.cancel()
        assert not our_fds_on(path), "the cancelled waiter's descriptor points elsewhere now"
        holder.kill()
        holder.wait()
        # the kernel grants the orphaned call the lock and drops it as the call returns
        assert wait_until(lambda: not blocked_waiters(path))
        assert wait_until(lambda: flock_free(path))
        assert waiters.next_won(0.2) is None, "a cancelled waiter hands nothing over"
        for _ in range(20):
            assert flock_free(path)
    finally:
        holder.kill()
        holder.wait()


def test_a_waiting_pick_blocks_on_the_held_lock_instead_of_polling(tmp_path):
    sim = tmp_path / "sim"
    install(sim, SimState.idle(gpus=1))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -w 600 {tmp_path}/gpu-<id>.lock")
    sampler = IdleSampler(RocmBackend(runner), 0.0, lock_path_for=lock.path_for)
    sampler.start()
    picker = GpuPicker(sampler, lock, runner)
    holder = hold(lock.path_for(0))
    got: list = []
    thread = threading.Thread(target=lambda: got.append(picker.acquire(wait_s=60)))
    try:
        thread.start()
        assert wait_until(lambda: bool(blocked_waiters(lock.path_for(0)))), "the pick does not block on the lock"
        assert not got
        holder.kill()
        holder.wait()
        thread.join(timeout=30)
        assert got and got[0].indices == [0] and got[0].leases[0].held
        assert not blocked_waiters(lock.path_for(0)), "no waiter is left behind once the pick has its GPU"
        picker.release(got[0])
        assert flock_free(lock.path_for(0))
    finally:
        holder.kill()
        holder.wait()
        sampler.stop()


def test_a_multi_gpu_pick_takes_every_lock_its_waiters_won_at_once(tmp_path):
    """Four GPUs held by another user, let go together: the pick for 4 runs. Its waiters win several
    locks in one round; taken one a round, the others stayed held by this process and counted as
    locked, and the pick held most GPUs without ever running (seen with two sessions of TP=4 targets)."""
    sim = tmp_path / "sim"
    install(sim, SimState.idle(gpus=4))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -w 600 {tmp_path}/gpu-<id>.lock")
    sampler = IdleSampler(RocmBackend(runner), 0.0, lock_path_for=lock.path_for)
    sampler.start()
    picker = GpuPicker(sampler, lock, runner)
    paths = [lock.path_for(i) for i in range(4)]
    holder = subprocess.Popen(
        [
            "sh",
            "-c",
            'exec 3>"$1" 4>"$2" 5>"$3" 6>"$4"; flock 3; flock 4; flock 5; flock 6; exec sleep 60',
            "sh",
            *paths,
        ]
    )
    got: list = []
    thread = threading.Thread(target=lambda: got.append(picker.acquire(count=4, wait_s=60)))
    try:
        assert wait_until(lambda: not any(flock_free(p) for p in paths)), "the holder never took the four locks"
        thread.start()
        assert wait_until(lambda: all(blocked_waiters(p) for p in paths)), "the pick does not block on each lock"
        holder.kill()
        holder.wait()
        thread.join(timeout=30)
        assert got and sorted(got[0].indices) == [0, 1, 2, 3] and all(le.held for le in got[0].leases)
        picker.release(got[0])
        assert all(flock_free(p) for p in paths)
    finally:
        holder.kill()
        holder.wait()
        sampler.stop()
