"""Options as names, bounded picker and kill, and the messages around them, without Docker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_gpuverify
from pytest_gpuverify.config.envfile import EnvFileError, parse_env_text, parse_lock_prefix
from pytest_gpuverify.config.options import SetupError
from pytest_gpuverify.execute.host_commands import CommandResult, LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.lease.picker import GpuPicker, PickerError
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.simulator import SimState, install

OPTIONS_DOC = Path(pytest_gpuverify.__file__).resolve().parents[1] / "docs" / "options.md"  # of the code under test
PICKER_TIMEOUT_S = 20.0  # the GPU tools' own limit (gpu/rocm.py)


@pytest.mark.parametrize(
    "topic", ["a/b", "../../escape", "..", "a..b", "a\0b", "x" * 300, "-x", ".hidden", "", "x.json.json"]
)
def test_a_topic_is_a_name(topic):
    from pytest_gpuverify.config.options import check_topic

    with pytest.raises(SetupError) as err:
        check_topic(topic)
    message = str(err.value)
    assert "\n" not in message and "\0" not in message and len(message) < 300
    assert message.startswith("--gpu-topic ") and "Fix:" in message


@pytest.mark.parametrize(
    "given, topic",
    [
        ("gemm", "gemm"),
        ("gemm.json", "gemm"),
        ("AITER-1_bf16.v2", "AITER-1_bf16.v2"),
        ("x" * 64, "x" * 64),
        (None, None),
    ],
)
def test_a_json_suffix_is_dropped_not_doubled(given, topic):
    from pytest_gpuverify.config.options import check_topic

    assert check_topic(given) == topic


@pytest.fixture
def sim(tmp_path):
    sim = tmp_path / "sim"
    install(sim, SimState.idle(gpus=4))
    runner = LocalHost(env={"PATH": f"{sim}:/usr/bin:/bin"})
    lock = parse_lock_prefix(f"flock -E 75 -w 600 {tmp_path}/gpu-<id>.lock")
    return runner, lock


class RecordingHost:
    """A picker command that never answers: records the limit each call was given."""

    name = "local"

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def run(self, argv, timeout=30.0, env=None):
        self.timeouts.append(timeout)
        return CommandResult(tuple(argv), None, b"", b"", timed_out=True)


def test_a_hanging_picker_gets_the_tool_timeout_not_two_minutes(sim):
    runner, lock = sim
    sampler = IdleSampler(RocmBackend(runner), 0.0)
    sampler.start()
    host = RecordingHost()
    try:
        with pytest.raises(PickerError, match=r"gave no answer within 20 s\. Fix:"):
            GpuPicker(sampler, lock, host, picker_command="sleep 600").acquire(wait_s=5)
    finally:
        sampler.stop()
    assert host.timeouts == [PICKER_TIMEOUT_S]


def test_a_picker_never_runs_past_the_wait(sim, tmp_path):
    """A picker that prints a locked GPU is asked again while --gpu-wait lasts, never past it."""
    runner, lock = sim
    sampler = IdleSampler(RocmBackend(runner), 0.0)
    sampler.start()
    holder = subprocess.Popen(["flock", "-x", "-o", str(lock.path_for(2)), "sleep", "30"])
    calls = tmp_path / "calls"
    try:
        while subprocess.run(["flock", "-n", str(lock.path_for(2)), "true"]).returncode == 0:
            pass
        picker = GpuPicker(sampler, lock, runner, picker_command=f"echo x >> {calls}; echo 2")
        from pytest_gpuverify.lease.picker import NoGpu

        with pytest.raises(NoGpu, match="held by locks"):
            picker.acquire(wait_s=1.5)
    finally:
        holder.kill()
        holder.wait()
        sampler.stop()
    assert len(calls.read_text().split()) >= 2, "asked again while waiting"


def test_a_real_hanging_picker_is_stopped_at_its_limit(sim):
    runner, lock = sim
    sampler = IdleSampler(RocmBackend(runner), 0.0)
    sampler.start()
    try:
        picker = GpuPicker(sampler, lock, runner, picker_command="sleep 600", picker_timeout_s=0.5)
        with pytest.raises(PickerError, match=r"'sleep 600' gave no answer within 0\.5 s"):
            picker.acquire()
    finally:
        sampler.stop()
    ps = subprocess.run(["pgrep", "-f", "^sleep 600$"], capture_output=True, text=True).stdout.split()
    assert ps == [], "the picker's process group is killed"


def test_a_picker_index_out_of_range_is_refused_without_a_lock_file(sim, tmp_path):
    runner, lock = sim
    sampler = IdleSampler(RocmBackend(runner), 0.0)
    sampler.start()
    try:
        with pytest.raises(PickerError) as err:
            GpuPicker(sampler, lock, runner, picker_command="echo 99").acquire()
    finally:
        sampler.stop()
    assert "printed GPU 99, but this host's readings have GPUs 0-3" in str(err.value) and "Fix:" in str(err.value)
    assert not lock.path_for(99).exists(), "no lock file is made for a GPU that is not there"


def hosts(gpus: str) -> str:
    return f"## Hosts\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n| box | local | gfx942 | {gpus} |\n"


@pytest.mark.parametrize("gpus", ["-1", "0", "8.0"])
def test_a_gpu_count_below_one_says_it_must_be_a_count(gpus):
    with pytest.raises(EnvFileError) as err:
        parse_env_text(hosts(gpus), "env.md")
    assert f"gpus {gpus!r} must be a whole number of GPUs, 1 or more. Fix: write the GPU count, e.g. 8." in str(
        err.value
    )
    assert "not a number" not in str(err.value)


def test_a_missing_lock_folder_is_a_setup_error_naming_the_folder(tmp_path):
    from pytest_gpuverify.config.hosts import lock_for

    env = parse_env_text(
        hosts("4") + "## GPU lock\n| host | picker | lock |\n|---|---|---|\n"
        f"| box | builtin | `flock -w 600 {tmp_path}/nope/gpu-<id>.lock` |\n",
        "env.md",
    )
    with pytest.raises(SetupError) as err:
        lock_for(env, env.hosts[0])
    assert f"the GPU lock folder {tmp_path}/nope does not exist. Fix: create it" in str(err.value)
    assert not (tmp_path / "nope").exists()


def test_a_lock_folder_per_gpu_is_checked_above_the_id(tmp_path):
    from pytest_gpuverify.config.lockspec import lock_folder, lock_folder_problem

    spec = parse_lock_prefix(f"flock {tmp_path}/locks/<id>/gpu.lock")
    assert lock_folder(spec) == tmp_path / "locks"
    assert "does not exist" in lock_folder_problem(spec)
    (tmp_path / "locks").mkdir()
    assert lock_folder_problem(spec) is None


def test_topic_claims_of_two_workers_never_share_a_name(tmp_path):
    from pytest_gpuverify.config.topics import TopicClaims

    shared = tmp_path / "claims"
    shared.mkdir()
    worker_a, worker_b = TopicClaims(shared), TopicClaims(shared)
    out = tmp_path / "T-1"
    assert worker_a.claim(out, "slow") == "slow"
    assert worker_b.claim(out, "slow") == "slow-2"
    assert worker_a.claim(out, "slow") == "slow-3"
    assert worker_b.claim(tmp_path / "T-2", "slow") == "slow", "another ticket folder is another name space"
    assert not out.exists(), "claims live outside the ticket folder"


def test_the_summary_counts_a_target_whose_report_never_came():
    from types import SimpleNamespace

    from pytest_gpuverify.face.terminal import VerdictSummary
    from pytest_gpuverify.records.artifact import Artifact

    art = Artifact(
        plugin_version="0",
        topic="sleep",
        ts="2026-01-01T00:00:00Z",
        host="h",
        verdict="INCONCLUSIVE",
        reasons=["interrupted (Ctrl-C) while the command ran"],
    )
    engine = SimpleNamespace(
        outcomes=[
            SimpleNamespace(
                target=SimpleNamespace(name="op_tests/test_sleep.py"),
                artifact=art,
                artifact_path=Path("/t/bench_sleep.json"),
            )
        ]
    )
    lines: list[str] = []
    reporter = SimpleNamespace(
        section=lambda *a, **k: None, line=lines.append, config=SimpleNamespace(getoption=lambda *a, **k: False)
    )
    VerdictSummary(lambda: engine).pytest_terminal_summary(reporter)
    assert lines and lines[0].startswith("INCONCLUSIVE ") and lines[0].endswith("-> /t/bench_sleep.json"), lines


IGNORES_TERM = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(60)\n"
)


def test_a_host_command_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    from pytest_gpuverify.execute.bounds import GRACE_S
    from pytest_gpuverify.execute.host import HostExecutor

    outcome = HostExecutor().stream_to_file([sys.executable, "-c", IGNORES_TERM], tmp_path / "out.log", timeout_s=1)
    assert outcome.timed_out and outcome.exit_code == -9
    assert GRACE_S <= 3 and outcome.duration_s < 1 + 5, outcome.duration_s


def test_the_options_page_states_what_the_options_do():
    from pytest_gpuverify.execute.bounds import GRACE_S

    text = OPTIONS_DOC.read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(--[a-z-]+)[^|]*\|.*$", text, re.M)}
    assert "nothing else is collected" not in rows["--gpu-target"]
    assert "path arguments given with it run too" in rows["--gpu-target"]
    assert "usage error" in rows["--gpu-topic"] and "two or more targets" in rows["--gpu-topic"]
    assert "declared ones included" in rows["--gpu-args"]
    assert f"SIGKILL {GRACE_S} s later" in rows["--gpu-timeout"]
    assert "usage error" in rows["--ticket"] and "`tickets`" in rows["--ticket"]
    assert f"within {PICKER_TIMEOUT_S:g} s" in text and "--gpu-wait" in text
