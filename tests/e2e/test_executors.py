"""Both executors keep the one Executor protocol (execute/base.py): the same calling code, run on the
host and in a real container, sees the same capped output, the same time limit and the same stop."""

from __future__ import annotations

import inspect
import os
import signal
import threading
import uuid

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.execute.base import Executor, Interrupted
from pytest_gpuverify.execute.bounds import GRACE_S, MAX_OUTPUT_BYTES
from pytest_gpuverify.execute.container import ContainerExecutor
from pytest_gpuverify.execute.host import HostExecutor

CAP = 1000


@pytest.fixture(params=["host", "container"])
def executor(request, tmp_path):
    if request.param == "host":
        yield HostExecutor()
        return
    client = request.getfixturevalue("docker_client")
    name = f"gv-exec-{uuid.uuid4().hex[:8]}"
    demo.start_container(client, name, None, {})
    try:
        yield ContainerExecutor(client, name)
    finally:
        demo.remove_sandbox_containers(client, [name])


@pytest.mark.parametrize("cls", [HostExecutor, ContainerExecutor])
def test_each_executor_has_the_protocols_calls_with_its_parameters(cls):
    for name in ("capture", "stream_to_file", "inspect"):
        want = inspect.signature(getattr(Executor, name)).parameters
        have = inspect.signature(getattr(cls, name)).parameters
        assert [(p.name, p.default) for p in have.values()] == [(p.name, p.default) for p in want.values()], (cls, name)
    for name in ("image", "running"):  # `name` is an instance's (isinstance checks it below)
        assert hasattr(cls, name), (cls, name)
    assert cls.output_cap == MAX_OUTPUT_BYTES


def run_capped(runner: Executor, out) -> tuple:
    """The calling code both executors get: a command printing more than the cap."""
    assert isinstance(runner, Executor)
    runner.output_cap = CAP
    echoed: list[bytes] = []
    started: list[list[str]] = []
    outcome = runner.stream_to_file(
        ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x; echo; echo end"],
        out,
        timeout_s=60,
        echo=echoed.append,
        on_start=started.append,
    )
    return outcome, b"".join(echoed), started


def test_output_past_the_cap_is_counted_not_kept(executor, tmp_path):
    out = tmp_path / "out.log"
    outcome, echoed, started = run_capped(executor, out)
    assert outcome.exit_code == 0 and not outcome.timed_out and outcome.interrupted is None
    assert out.read_bytes() == b"x" * CAP, "the file holds exactly the cap, from the start"
    assert outcome.bytes_written == CAP
    assert outcome.problems == [f"output passed {CAP} bytes; the rest was not saved"]
    assert echoed == b"x" * 5000 + b"\nend\n", "the echo sees everything, cap or not"
    where = "host" if isinstance(executor, HostExecutor) else "container"
    assert len(started) == 1 and started[0][0] == where, "on_start got how to stop it from elsewhere"


def test_probe_looks_into_its_folders_just_before_the_command(executor, tmp_path):
    """The warm caches' state comes with the command's own start: a folder holding anything (a dot
    file too) is held, an empty or missing one is not; what the command itself writes comes after
    the look; the command sees neither the probe's variable nor its answer."""
    base = f"/tmp/gv-probe-{uuid.uuid4().hex[:8]}"
    executor.capture(
        ["sh", "-c", f"mkdir -p {base}/empty {base}/dot {base}/full && touch {base}/dot/.keep {base}/full/x"]
    )
    shows_env = "echo ${GPUVERIFY_CACHE_PROBE:-unset}; touch " + f"{base}/empty/made-by-the-command"
    try:
        cases = [
            ((f"{base}/missing", f"{base}/empty"), False),
            ((f"{base}/missing", f"{base}/dot"), True),
            ((f"{base}/full",), True),
        ]
        for n, (folders, held) in enumerate(cases):
            out = tmp_path / f"out{n}.log"
            outcome = executor.stream_to_file(["sh", "-c", shows_env], out, timeout_s=30, probe=folders)
            executor.capture(["rm", "-f", f"{base}/empty/made-by-the-command"])
            assert (outcome.exit_code, outcome.caches_held) == (0, held), (folders, outcome)
            assert out.read_bytes() == b"unset\n", "neither the probe's variable nor its answer reach the command"
        outcome = executor.stream_to_file(["true"], tmp_path / "none.log", timeout_s=30)
        assert outcome.caches_held is None, "not asked: no answer"
    finally:
        executor.capture(["rm", "-rf", base])


def test_capture_keeps_the_first_bytes_up_to_its_limit(executor):
    code, out = executor.capture(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' y; exit 3"], limit=100)
    assert (code, out) == (3, b"y" * 100)


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(executor, tmp_path):
    tag = f"gv-exec-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.log"
    outcome = executor.stream_to_file(["sh", "-c", "trap '' TERM; echo up; sleep 60", tag], out, timeout_s=1)
    assert outcome.timed_out and outcome.interrupted is None
    # (in a container the wrapper's shell may add its own "Killed" line after it: container.py)
    assert out.read_bytes().startswith(b"up\n"), "what it printed before the limit is kept"
    assert 1 + GRACE_S - 0.5 <= outcome.duration_s < 1 + GRACE_S + 4, outcome.duration_s
    code, ps = executor.capture(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert code == 0 and b"/proc/" in ps, "the look at the processes ran"  # its own `sh -c` names no tag
    assert tag.encode() not in ps, "the command and its group are gone"


def test_ctrl_c_stops_the_command_and_carries_what_was_known(executor, tmp_path):
    tag = f"gv-exec-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.log"
    sent: list[bool] = []

    def ctrl_c_once_it_runs(data: bytes) -> None:
        if b"up" in data and not sent:  # the command runs; a moment later the executor waits on it
            sent.append(True)
            # A signal landing between Python's signal check and the blocking wait's entry is seen only
            # when the wait ends (CPython's race, a microsecond wide): this test is Ctrl-C during the wait.
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

    with pytest.raises(Interrupted) as info:
        executor.stream_to_file(["sh", "-c", "echo up; sleep 60", tag], out, timeout_s=60, echo=ctrl_c_once_it_runs)
    outcome = info.value.outcome
    assert outcome.interrupted == "Ctrl-C" and not outcome.timed_out
    assert out.read_bytes().startswith(b"up\n") and outcome.bytes_written >= 3
    assert outcome.duration_s < GRACE_S + 5, outcome.duration_s
    code, ps = executor.capture(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert code == 0 and b"/proc/" in ps and tag.encode() not in ps, "the command is gone"


def test_a_second_ctrl_c_does_not_cut_the_stop_short(executor, tmp_path):
    """The command ignores SIGTERM; a second Ctrl-C comes during the stop's grace. The stop still ends
    with the command killed and the outcome carried (a second Ctrl-C used to escape the host's stop,
    leaving the command running with its GPU let go)."""
    tag = f"gv-exec-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.log"
    sent: list[bool] = []

    def ctrl_c_twice(data: bytes) -> None:
        if b"up" in data and not sent:
            sent.append(True)
            for at in (0.3, 0.3 + GRACE_S / 2):
                threading.Timer(at, os.kill, (os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt) as info:  # not Interrupted alone: a bare one must fail, not abort
        executor.stream_to_file(
            ["sh", "-c", "trap '' TERM; echo up; sleep 60", tag], out, timeout_s=60, echo=ctrl_c_twice
        )
    assert isinstance(info.value, Interrupted), "the second Ctrl-C cut the stop short"
    assert info.value.outcome.interrupted == "Ctrl-C"
    code, ps = executor.capture(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert code == 0 and b"/proc/" in ps and tag.encode() not in ps, "the command is gone"


def test_an_error_of_ours_once_the_command_runs_stops_it_before_it_goes_up(executor, tmp_path):
    """on_start (the guard, the parser's warm-up) failing must not leave the command running: the
    caller lets go of the GPU's lock as the error goes up."""
    tag = f"gv-exec-{uuid.uuid4().hex[:8]}"

    def broken_on_start(stop) -> None:
        raise RuntimeError("a bug in on_start")

    with pytest.raises(RuntimeError, match="a bug in on_start"):
        executor.stream_to_file(
            ["sh", "-c", "echo up; sleep 60", tag], tmp_path / "out.log", timeout_s=60, on_start=broken_on_start
        )
    code, ps = executor.capture(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert code == 0 and b"/proc/" in ps and tag.encode() not in ps, "the command is gone"


def test_an_engine_that_is_gone_is_a_container_error(tmp_path):
    """The Docker daemon stopped (its socket gone): each call of the executor says so as a
    ContainerError naming the container, which the run records as its reason; requests' own
    ConnectionError, which the SDK does not wrap, used to escape as an internal error."""
    import docker

    from pytest_gpuverify.execute.container import ContainerError, ContainerExecutor

    client = docker.DockerClient(base_url=f"unix://{tmp_path}/docker.sock", version="1.41")
    gone = ContainerExecutor(client, "gv-gone")
    calls = {
        "capture": lambda: gone.capture(["true"]),
        "running": lambda: gone.running,
        "stream_to_file": lambda: gone.stream_to_file(["true"], tmp_path / "out.log"),
    }
    for name, call in calls.items():
        with pytest.raises(ContainerError, match="'gv-gone'"):
            call()
            pytest.fail(f"{name} did not raise")
