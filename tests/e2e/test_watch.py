"""The held GPUs watched while a command runs (lease/watch.py): which processes are the run's, which are
someone else's (on the host, and in a shared container through the real Docker Engine), the clocks, and the
verdict a shared GPU gets. Real processes; a scripted backend."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.engine.verdict import decide
from pytest_gpuverify.execute.container import ContainerExecutor
from pytest_gpuverify.execute.leftovers import MARKER, marked_in_container, run_marker
from pytest_gpuverify.gpu.base import GpuProcess, GpuReading
from pytest_gpuverify.gpu.clocks import ClockSample
from pytest_gpuverify.lease.watch import CommandWatch, OwnProcesses, shared_reasons
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import Correctness, RunRecord


@pytest.fixture
def tree():
    """A command (sh) with a child, and an unrelated process: real pids."""
    command = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    other = subprocess.Popen(["sleep", "30"])
    time.sleep(0.3)
    child = int(subprocess.run(["pgrep", "-P", str(command.pid)], capture_output=True, text=True).stdout.split()[0])
    yield command.pid, child, other.pid
    for p in (command, other):
        p.kill()
        p.wait()
    subprocess.run(["pkill", "-P", str(command.pid)], check=False)


def test_the_commands_tree_is_its_own_another_process_is_not(tree):
    command, child, other = tree
    owner = OwnProcesses()
    owner.started(["host", str(command), "GPUVERIFY_RUN_ID=x"])
    assert owner.is_own(command) is True and owner.is_own(child) is True
    assert owner.is_own(other) is False
    assert owner.is_own(4_000_000) is None  # not visible here: not attributed


def pid_of(argv: str, within_s: float = 10.0) -> int:
    """The host pid of the one process whose command line is ``argv`` (words joined by spaces)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if fh.read().replace(b"\0", b" ").strip() == argv.encode():
                        return int(name)
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"no process {argv!r}")


@pytest.mark.docker
def test_in_a_shared_container_another_exec_is_foreign_the_runs_tree_is_its_own(docker_client, tmp_path):
    """A long-lived dev container: a teammate's job runs in it by another `docker exec` while the run's
    command runs there, with a child, a double-forked worker and a server in a session of its own."""
    name = f"gv-own-{uuid.uuid4().hex[:8]}"
    container = demo.start_container(docker_client, name, None, {})
    try:
        executor = ContainerExecutor(docker_client, name)
        teammate = docker_client.api.exec_create(name, ["sleep", "41.5"])["Id"]
        docker_client.api.exec_start(teammate, detach=True)
        marker = run_marker("own")
        specs: list = []
        command = "sleep 40.1 & (sleep 40.2 &) ; (setsid sleep 40.3 &) ; sleep 3"
        runner = threading.Thread(
            target=executor.stream_to_file,
            args=(["sh", "-c", command], tmp_path / "out"),
            kwargs={"env": marker, "on_start": specs.append, "timeout_s": 30},
        )
        runner.start()
        child, worker, server, other = (pid_of(f"sleep {s}") for s in ("40.1", "40.2", "40.3", "41.5"))
        owner = OwnProcesses(container.id, ask=lambda pid, run_id: marked_in_container(executor.capture, pid, run_id))
        owner.started(specs[0])
        assert [owner.is_own(p) for p in (child, worker, server)] == [True, True, True]
        assert owner.is_own(other) is False, "another exec in the run's own container is another's job"
        # what a session user that may not read a root process's environment asks the container
        inner = int(open(f"/proc/{other}/status").read().split("NSpid:")[1].split("\n")[0].split()[-1])
        assert marked_in_container(executor.capture, inner, marker[MARKER]) is False
        inner = int(open(f"/proc/{server}/status").read().split("NSpid:")[1].split("\n")[0].split()[-1])
        assert marked_in_container(executor.capture, inner, marker[MARKER]) is True
        assert marked_in_container(executor.capture, 999_999, marker[MARKER]) is None, "gone: the container cannot tell"
        runner.join(30)
    finally:
        demo.remove_sandbox_containers(docker_client, [name])


class Scripted:
    """A backend whose readings list the processes and clocks the test gives it."""

    vendor, visible_devices_var = "nvidia", "CUDA_VISIBLE_DEVICES"

    def __init__(self, procs, clocks=()):
        self.procs, self.clock_samples = procs, list(clocks)

    def reading_source(self):
        return "NVML, in-process"

    def read(self):
        return [
            GpuReading(
                index=i,
                use_pct=50,
                vram_used_bytes=1,
                vram_total_bytes=2,
                processes=tuple(GpuProcess(pid=p, name=n, vram_bytes=v) for g, p, n, v in self.procs if g == i),
            )
            for i in range(4)
        ]

    def clocks(self, indices):
        sample = self.clock_samples.pop(0) if len(self.clock_samples) > 1 else self.clock_samples[0]
        return [sample.model_copy(update={"index": i}) for i in indices]


def wall(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


def test_a_foreign_process_on_the_held_gpu_is_recorded_and_makes_the_run_inconclusive(tree):
    command, child, other = tree
    backend = Scripted(
        [(3, child, "python3", 2 << 30), (3, other, "sleep", 60 << 30), (1, 999, "x", 1 << 30)],
        [ClockSample(index=0, sm_mhz=1980, mem_mhz=3200, temp_c=40, power_w=120)],
    )
    owner = OwnProcesses()
    watch = CommandWatch(backend, [3], owner, wall, interval_s=0.05)
    watch.start()
    watch.on_start(["host", str(command)])
    time.sleep(0.3)
    record = watch.stop()
    assert [(p.gpu, p.pid, p.name, p.vram_mib) for p in record.foreign] == [(3, other, "sleep", 61440.0)]
    assert record.samples >= 2 and record.backend == "NVML, in-process"
    [reason] = shared_reasons([record])
    assert (
        reason.startswith(f"gpu 3 was shared during the run: pid {other} (sleep, user ") and "60 GiB) from " in reason
    )
    run = RunRecord(ran=True, exit_code=0, shared=[reason])
    passing = ParsedOutput(parser="pytest", correctness=Correctness(passed=True, shapes_checked=3, checks_passed=3))
    assert decide(run, passing) == ("INCONCLUSIVE", [reason])
    assert decide(run.model_copy(update={"shared": []}), passing) == ("PASS", [])


def test_the_runs_own_child_on_its_gpu_keeps_it_clean(tree):
    command, child, _ = tree
    watch = CommandWatch(
        Scripted([(0, child, "python3", 8 << 30)], [ClockSample(index=0)]), [0], OwnProcesses(), wall, interval_s=0.05
    )
    watch.start()
    watch.on_start(["host", str(command)])
    time.sleep(0.2)
    assert watch.stop().foreign == []


class Gated(Scripted):
    """A backend whose readings wait for the test's word: a slow reader (the ROCm tools) made exact."""

    def __init__(self, procs, gate: threading.Event):
        super().__init__(procs, [ClockSample(index=0)])
        self.gate = gate

    def read(self):
        if not self.gate.wait(10):
            raise RuntimeError("the test never let the reading go")
        return super().read()


def test_the_last_look_runs_alongside_what_follows_and_stop_waits_for_it(tree):
    """end() hands the last reading to the watch's thread and returns while it is still under way (here
    held at a gate the test opens only after end() returned); stop() waits for it and records what it saw."""
    command, _, other = tree
    gate = threading.Event()
    watch = CommandWatch(Gated([(3, other, "sleep", 1 << 30)], gate), [3], OwnProcesses(), wall, interval_s=60)
    watch.start()  # the interval outlasts the command: the last look is its only reading
    watch.on_start(["host", str(command)])
    watch.end()
    gate.set()
    record = watch.stop()
    assert record.samples == 1 and record.problems == [], record.problems
    assert [(p.gpu, p.pid) for p in record.foreign] == [(3, other)]


def clocks_of(samples):
    watch = CommandWatch(Scripted([], samples), [2], OwnProcesses(), wall, interval_s=0.05)
    watch.start()
    time.sleep(0.3)
    [clocks] = watch.stop().clocks
    return clocks


def test_clocks_at_start_and_end_their_extremes_and_throttling():
    samples = [
        ClockSample(index=0, sm_mhz=345, mem_mhz=3200, temp_c=40, power_w=80, throttle=("gpu_idle",), sm_max_mhz=1980),
        ClockSample(
            index=0, sm_mhz=1200, mem_mhz=3200, temp_c=91, power_w=700, throttle=("hw_slowdown",), sm_max_mhz=1980
        ),
        ClockSample(index=0, sm_mhz=1755, mem_mhz=3200, temp_c=70, power_w=400, sm_max_mhz=1980),
    ]
    clocks = clocks_of(samples)
    assert clocks.index == 2 and clocks.start.sm_mhz == 345 and clocks.end.sm_mhz == 1755
    assert (clocks.sm_mhz_min, clocks.sm_mhz_max, clocks.temp_c_max, clocks.power_w_max) == (345, 1755, 91, 700)
    assert clocks.throttle_seen == ["gpu_idle", "hw_slowdown"] and clocks.sm_mhz_rated == 1980 and clocks.throttled
    assert (clocks.unlike_events, clocks.normal_events) == (["hw_slowdown"], ["gpu_idle"])


def test_a_power_cap_is_the_normal_state_at_any_clock_a_thermal_slowdown_is_not():
    """What an H200 reports under a heavy matmul: sw_power_cap in most readings, at its full 1980 MHz and
    below (704 W at 1400 MHz, measured): the GPU at its cap, as every like run is; not throttling."""
    samples = [
        ClockSample(index=0, sm_mhz=345, throttle=("gpu_idle",), sm_max_mhz=1980),
        ClockSample(index=0, sm_mhz=1980, power_w=410, throttle=("sw_power_cap",), sm_max_mhz=1980),
        ClockSample(index=0, sm_mhz=1400, power_w=704, throttle=("sw_power_cap",), sm_max_mhz=1980),
    ]
    clocks = clocks_of(samples)
    assert clocks.throttle_seen == ["gpu_idle", "sw_power_cap"] and not clocks.throttled
    assert (clocks.unlike_events, clocks.normal_events) == ([], ["gpu_idle", "sw_power_cap"])
    hot = clocks_of(
        [*samples[:2], ClockSample(index=0, sm_mhz=1900, throttle=("sw_power_cap", "sw_thermal"), sm_max_mhz=1980)]
    )
    assert hot.throttled and (hot.unlike_events, hot.normal_events) == (["sw_thermal"], ["gpu_idle", "sw_power_cap"])


def test_idle_reasons_alone_are_not_throttling():
    watch = CommandWatch(
        Scripted([], [ClockSample(index=0, sm_mhz=1980, throttle=("gpu_idle",))]),
        [0],
        OwnProcesses(),
        wall,
        interval_s=0.05,
    )
    watch.start()
    [clocks] = watch.stop().clocks
    assert clocks.throttle_seen == ["gpu_idle"] and not clocks.throttled and clocks.normal_events == ["gpu_idle"]


def test_a_backend_without_clocks_says_so():
    watch = CommandWatch(
        type("NoClocks", (), {"read": Scripted([]).read, "reading_source": lambda s: "rocm-smi"})(),
        [0],
        OwnProcesses(),
        wall,
    )
    assert watch.interval_s == 2.0  # the ROCm tools cost a process a reading
    watch.start()
    record = watch.stop()
    assert record.clocks == [] and record.problems == ["clocks: this backend reads none"]
