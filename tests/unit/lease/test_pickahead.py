"""The pick started alongside a target's checks (pickahead.py), the re-check's reading shared once
the command has started, and the parser warmed while it runs (overlap.py), on the simulated host."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_gpuverify.common.threads import Background
from pytest_gpuverify.config.envfile import parse_lock_prefix
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.lock import GpuLease, held_lock_ids, lock_id
from pytest_gpuverify.lease.pickahead import PickAhead
from pytest_gpuverify.lease.picker import GpuPicker, NoGpu
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.lease.shared_readings import SharedReadings
from pytest_gpuverify.parsers.warm import ParserWarmer
from pytest_gpuverify.simulator import SimState, install


@pytest.fixture
def host(tmp_path):
    sim = tmp_path / "sim"
    install(sim, SimState.idle(gpus=2))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -E 75 -w 600 {tmp_path}/gpu-<id>.lock")
    shared = SharedReadings("test-pickahead", max_age_s=0.2, directory=tmp_path / "readings")
    (tmp_path / "readings").mkdir()
    sampler = IdleSampler(RocmBackend(runner), 0.0, interval_s=0.2, shared=shared)
    sampler.start()
    yield GpuPicker(sampler, lock, runner), lock, shared
    sampler.stop()


def free(lock, index: int) -> bool:
    lease = GpuLease(lock.path_for(index), index)
    if not lease.try_acquire():
        return False
    lease.release()
    return True


def test_the_grant_is_the_pick_and_dropping_after_it_changes_nothing(host):
    picker, lock, _ = host
    ahead = PickAhead(picker, 1, 0.0)
    grant = ahead.grant()
    assert grant.indices == [0] and not free(lock, 0)
    ahead.drop()  # the session drops every pick at the end of a target: a granted one stays held
    assert not free(lock, 0)
    picker.release(grant)
    assert free(lock, 0)


def test_checks_that_fail_let_the_gpu_go_unused(host):
    picker, lock, _ = host
    ahead = PickAhead(picker, 1, 0.0)
    deadline = time.monotonic() + 5
    # watched read-only (/proc/locks): a probe that took the lock for a moment would send the pick to GPU 1
    while lock_id(lock.path_for(0)) not in (held_lock_ids() or set()):  # the pick has taken GPU 0
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ahead.drop()
    assert free(lock, 0) and free(lock, 1)


def test_dropping_a_waiting_pick_stops_the_wait_and_takes_nothing(host):
    picker, lock, _ = host
    held = [GpuLease(lock.path_for(i), i) for i in (0, 1)]
    assert all(lease.try_acquire() for lease in held)
    try:
        ahead = PickAhead(picker, 1, 60.0)  # would wait a minute for a GPU
        time.sleep(0.2)
        t0 = time.monotonic()
        ahead.drop()
        with pytest.raises(NoGpu):
            ahead._pick.result()  # the wait ended at once, with no GPU
        assert time.monotonic() - t0 < 2
    finally:
        for lease in held:
            lease.release()
    assert free(lock, 0) and free(lock, 1)


def test_a_ctrl_c_while_waiting_for_the_grant_lets_the_gpu_go(host):
    """Ctrl-C lands while the session waits for the pick's grant (all GPUs held, a wait of a minute):
    the pick is dropped there, so the GPU it would take is never held by nobody."""
    import signal

    picker, lock, _ = host
    held = [GpuLease(lock.path_for(i), i) for i in (0, 1)]
    assert all(lease.try_acquire() for lease in held)

    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    try:
        ahead = PickAhead(picker, 1, 60.0)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            ahead.grant()
        held[0].release()  # a GPU comes free: a pick still waiting would take it and hold it
        time.sleep(1.0)
        assert free(lock, 0), "the interrupted pick took GPU 0 and kept it"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        held[1].release()


def test_a_pick_that_finds_no_gpu_raises_it_at_the_grant(host):
    picker, lock, _ = host
    held = [GpuLease(lock.path_for(i), i) for i in (0, 1)]
    assert all(lease.try_acquire() for lease in held)
    try:
        with pytest.raises(NoGpu, match="held by locks"):
            PickAhead(picker, 1, 0.0).grant()
    finally:
        for lease in held:
            lease.release()


def test_an_idle_recheck_is_shared_once_the_command_started_a_busy_one_at_once(host, tmp_path):
    picker, lock, shared = host
    sampler = picker.sampler
    shared.path.unlink(missing_ok=True)
    assert sampler.recheck(0) is None  # idle: a command is about to start on it
    assert not shared.path.exists(), "writing the shared file would sit between the lock and the command"
    sampler.publish_pending()  # what the session calls once the command has started
    taken, readings = shared.load(max_age_s=60)
    assert [r.index for r in readings] == [0, 1] and time.time() - taken < 5
    shared.path.unlink()
    assert sampler.recheck(7) == "not in the reading"  # no command starts: shared at once
    assert shared.path.exists()


def test_background_hands_back_the_value_or_the_error():
    assert Background(lambda: 41 + 1, "t").result() == 42

    def boom():
        raise ValueError("x")

    with pytest.raises(ValueError):
        Background(boom, "t").result()


def test_the_parser_warms_once_per_kind_after_the_guard(monkeypatch):
    from pytest_gpuverify.parsers import reader as dispatch

    calls, warmed = [], threading.Event()
    monkeypatch.setattr(dispatch, "warm", lambda kind: (calls.append(kind), warmed.set()))
    warmer = ParserWarmer()
    order = []
    for _ in range(3):
        warmer.on_start("bench", lambda stop: order.append(("guard", tuple(stop))), lambda: order.append("after"))(
            ["host", "1"]
        )
    assert warmed.wait(5)
    time.sleep(0.1)
    assert calls == ["bench"], "one warm-up per kind and session"
    assert order[:2] == [("guard", ("host", "1")), "after"]


def test_warming_a_parser_leaves_its_parse_unchanged(tmp_path):
    from pytest_gpuverify.parsers.reader import parse_output, warm

    log = tmp_path / "out.log"
    log.write_text("[checkAllclose atol=0.01 rtol=0.01 passed~]\nN=512 Triton 1658.7 GB/s\n")
    before = parse_output("bench", log).model_dump()
    warm("bench")
    warm("no-such-kind")  # an unknown kind is the parse's to report, not the warm-up's
    assert parse_output("bench", log).model_dump() == before
