"""The idle window, own-use exclusion, the lock-then-recheck order and NO_GPU, on the simulated host."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from pytest_gpuverify.config.envfile import parse_lock_prefix
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.picker import GpuPicker, NoGpu, PickerError
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.simulator import SimState, install, load_state, save_state


@pytest.fixture
def host(tmp_path, monkeypatch):
    sim = tmp_path / "sim"
    state_path = install(sim, SimState.idle(gpus=4))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -E 75 -w 600 {tmp_path}/gpu-<id>.lock")

    class Host:
        backend = RocmBackend(runner)

        def edit(self, fn):
            state = load_state(state_path)
            fn(state)
            save_state(state, state_path)

        def picker(self, window=0.0, command=None, **kw):
            sampler = IdleSampler(self.backend, window, **kw)
            sampler.start()
            return GpuPicker(sampler, lock, runner, picker_command=command), sampler

        def foreign_hold(self, index):
            proc = subprocess.Popen(["flock", "-x", "-o", str(lock.path_for(index)), "sleep", "30"])
            deadline = time.time() + 5
            while subprocess.run(["flock", "-n", str(lock.path_for(index)), "true"]).returncode == 0:
                assert time.time() < deadline
                time.sleep(0.02)
            return proc

    return Host()


def test_busy_moment_inside_window_disqualifies(host):
    picker, sampler = host.picker(window=1.2, interval_s=0.2)
    try:
        sampler.wait_for_full_window()
        host.edit(lambda s: s.set_busy(0))
        time.sleep(0.3)
        host.edit(lambda s: s.set_idle(0))
        sampler.sample_now()
        verdict = sampler.judge_window()
        assert 0 not in verdict.idle and verdict.idle == [1, 2, 3]
        assert "use 95%" in verdict.busy[0]
        time.sleep(1.5)  # the busy reading ages out of the window
        assert 0 in sampler.judge_window().idle
    finally:
        sampler.stop()


def test_own_use_is_left_out_of_the_window(host):
    picker, sampler = host.picker(window=1.0, interval_s=0.2)
    try:
        grant = picker.acquire()
        assert grant.indices == [0]
        host.edit(lambda s: s.set_busy(0))  # our own command loads GPU 0
        time.sleep(0.5)
        host.edit(lambda s: s.set_idle(0))
        picker.release(grant)
        time.sleep(0.6)
        assert 0 in sampler.judge_window().idle, "our own load must not make the next pick wait a window"
    finally:
        sampler.stop()


def test_a_read_that_straddles_our_own_start_is_left_out():
    """Under load a tool started just before our own use began reads the GPU after it began:
    that reading may hold our own load and must not make the next pick wait a window."""
    from pytest_gpuverify.gpu.base import GpuReading

    now = [100.0]
    sampler = None

    class StraddlingBackend:
        busy = False

        def read(self):
            if StraddlingBackend.busy:
                return [GpuReading(index=0, use_pct=95.0, vram_used_bytes=0, vram_total_bytes=1)]
            # our own use starts while this read is still running, and the read sees its load
            now[0] += 0.1
            use = sampler.mark_own_start(0)
            now[0] += 0.1
            sampler.mark_own_end(use)
            return [GpuReading(index=0, use_pct=95.0, vram_used_bytes=0, vram_total_bytes=1)]

    sampler = IdleSampler(StraddlingBackend(), 1.0, interval_s=0.2, clock=lambda: now[0])
    sampler.sample_now()
    assert sampler.judge_window().idle == [0], "a read overlapping our own use is ours"
    StraddlingBackend.busy = True
    now[0] += 1.0  # past the own-use grace: a busy read now is someone else's
    sampler.sample_now()
    assert sampler.judge_window().busy == {0: "use 95%"}


def test_lock_then_recheck_skips_a_gpu_that_became_busy(host, tmp_path):
    picker, sampler = host.picker(window=0.0)
    try:
        host.edit(lambda s: s.set_busy(0))  # the window (one old reading) still says GPU 0 is idle
        grant = picker.acquire()
        assert grant.indices == [1]
        assert subprocess.run(["flock", "-n", str(tmp_path / "gpu-0.lock"), "true"]).returncode == 0
        picker.release(grant)
    finally:
        sampler.stop()


def test_foreign_lock_is_skipped_and_no_gpu_names_why(host):
    holders = [host.foreign_hold(i) for i in (0, 1)]
    host.edit(lambda s: (s.set_busy(2), s.set_busy(3)))
    picker, sampler = host.picker(window=0.0)
    try:
        with pytest.raises(NoGpu) as err:
            picker.acquire()
        text = str(err.value)
        assert text.startswith("NO_GPU") and "2 held by locks (gpu 0, 1)" in text and "2 busy" in text
    finally:
        sampler.stop()
        for h in holders:
            h.kill()
            h.wait()


def test_wait_starts_when_a_gpu_frees_up(host):
    host.edit(lambda s: [s.set_busy(i) for i in range(4)])
    picker, sampler = host.picker(window=0.0)
    timer = threading.Timer(0.8, lambda: host.edit(lambda s: s.set_idle(2)))
    timer.start()
    try:
        t0 = time.monotonic()
        grant = picker.acquire(wait_s=10)
        assert grant.indices == [2] and 0.7 < time.monotonic() - t0 < 5
        picker.release(grant)
    finally:
        timer.cancel()
        sampler.stop()


def test_failing_tools_mean_no_gpu_not_a_guess(host):
    host.edit(lambda s: s.faults.update({"amd-smi": "garbage", "rocm-smi": "garbage"}))
    picker, sampler = host.picker(window=0.0)
    try:
        with pytest.raises(NoGpu) as err:
            picker.acquire()
        assert "GPU reading failed" in str(err.value)
    finally:
        sampler.stop()


def test_picker_command_path(host):
    picker, sampler = host.picker(window=0.0, command="echo picking >&2; echo 3")
    try:
        grant = picker.acquire()
        assert grant.indices == [3]
        picker.release(grant)
    finally:
        sampler.stop()
    bad, sampler = host.picker(window=0.0, command="echo no-gpu-here")
    try:
        with pytest.raises(PickerError, match="Fix:"):
            bad.acquire()
    finally:
        sampler.stop()


def test_picker_command_choosing_a_busy_gpu_is_refused(host):
    host.edit(lambda s: s.set_busy(3))
    picker, sampler = host.picker(window=0.0, command="echo 3")
    try:
        with pytest.raises(NoGpu, match="gpu 3: use 95% \\(under the lock\\)"):
            picker.acquire()
    finally:
        sampler.stop()


def test_two_gpus_in_order(host):
    picker, sampler = host.picker(window=0.0)
    try:
        grant = picker.acquire(count=2)
        assert grant.indices == [0, 1]
        picker.release(grant)
    finally:
        sampler.stop()


def test_load_under_someone_elses_lock_does_not_block_the_next_holder(tmp_path):
    """Another session's command loads GPU 0 while it holds GPU 0's lock; once it lets go, GPU 0 is
    ours at once, not a whole window later."""
    sim = tmp_path / "sim"
    state_path = install(sim, SimState.idle(gpus=1))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -w 600 {tmp_path}/gpu-<id>.lock")
    sampler = IdleSampler(RocmBackend(runner), 2.0, interval_s=0.2, lock_path_for=lock.path_for)
    picker = GpuPicker(sampler, lock, runner)
    holder = subprocess.Popen(["flock", "-x", "-o", str(lock.path_for(0)), "sleep", "3"])
    try:
        time.sleep(0.2)
        state = load_state(state_path)
        state.set_busy(0)
        save_state(state, state_path)
        sampler.start()
        sampler.wait_for_full_window()

        def release():
            state = load_state(state_path)
            state.set_idle(0)
            save_state(state, state_path)
            holder.kill()

        threading.Timer(0.5, release).start()
        t0 = time.monotonic()
        grant = picker.acquire(wait_s=10)
        assert grant.indices == [0] and time.monotonic() - t0 < 1.5
        picker.release(grant)
    finally:
        holder.kill()
        holder.wait()
        sampler.stop()


def test_a_busy_gpu_without_a_lock_stays_busy_for_the_window(host):
    picker, sampler = host.picker(window=1.0, interval_s=0.2)
    try:
        host.edit(lambda s: s.set_busy(0))
        time.sleep(0.5)
        host.edit(lambda s: s.set_idle(0))
        sampler.sample_now()
        assert 0 not in sampler.judge_window().idle, "a user who takes no lock is busy, lock or no lock"
    finally:
        sampler.stop()


def test_the_recheck_leaves_out_our_own_just_ended_use_but_not_anothers(host):
    """One GPU whose utilisation figure still averages over the command that just ended on it (NVML's
    does, for up to a second): the session's next pick takes it again at once. VRAM or a process of
    another user on it is still refused, just after our own use as ever."""
    host.edit(lambda s: s.gpus.__delitem__(slice(1, None)))
    picker, sampler = host.picker(window=0.0)
    try:
        grant = picker.acquire()
        assert grant.indices == [0]
        host.edit(lambda s: setattr(s.gpus[0], "use_pct", 100))  # our command, busy to its last moment
        picker.release(grant)
        again = picker.acquire()
        assert again.indices == [0], "our own load in the utilisation figure is not another user's"
        host.edit(lambda s: s.set_busy(0, use_pct=100, pid=4343))  # another user takes it as our command ends
        picker.release(again)
        with pytest.raises(NoGpu, match=r"gpu 0: VRAM 80\.3 GiB in use \(under the lock\)"):
            picker.acquire()
        host.edit(lambda s: (s.set_idle(0), setattr(s.gpus[0], "use_pct", 100)))
        time.sleep(sampler.OWN_USE_GRACE_S + 0.1)  # past our own use's end: the load is someone else's
        with pytest.raises(NoGpu, match=r"gpu 0: use 100% \(under the lock\)"):
            picker.acquire()
    finally:
        sampler.stop()


def test_an_nvml_utilisation_figure_is_ours_while_its_span_reaches_back_into_our_use():
    """NVML averages utilisation over up to a second before the reading: a figure read within a
    second of our own use's end (and its grace) is left out; later it counts."""
    from pytest_gpuverify.gpu.base import GpuReading

    now = [100.0]

    class Nvml:
        vram = 0

        def reading_source(self):
            return "NVML, in-process"

        def read(self):
            return [GpuReading(index=0, use_pct=40.0, vram_used_bytes=self.vram, vram_total_bytes=1 << 40)]

    backend = Nvml()
    sampler = IdleSampler(backend, 0.0, clock=lambda: now[0])
    assert sampler.use_span_s == 1.0
    use = sampler.mark_own_start(0)
    now[0] += 5.0
    sampler.mark_own_end(use)  # its end is marked with the grace: 105.5
    now[0] += sampler.OWN_USE_GRACE_S + 0.9
    assert sampler.recheck(0) is None
    backend.vram = 8 << 30
    assert sampler.recheck(0) == "VRAM 8.0 GiB in use", "only the utilisation figure is ours"
    backend.vram = 0
    now[0] += 0.2
    assert sampler.recheck(0) == "use 40%"
    sampler.publish_pending()


def test_the_simulated_utilisation_figure_outlasts_its_load_until_use_until(host):
    for until, read in ((time.time() + 30, 100.0), (time.time() - 1, 0.0), (None, 100.0)):
        host.edit(lambda s, until=until: (setattr(s.gpus[0], "use_pct", 100), setattr(s.gpus[0], "use_until", until)))
        assert host.backend.read()[0].use_pct == read, until
