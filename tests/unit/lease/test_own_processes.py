"""The run's own processes on a held GPU (lease/own_processes.py): its process tree, its session, its
marker; everything else is another's. A folder laid out like /proc (what a long-lived shared
container looks like from the host), and real process trees on this host."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pytest_gpuverify.lease.own_processes import OwnProcesses

CONTAINER = "3f1c0ffee0ddba11"
PID_FILE = "/tmp/gpuverify/5d41402abc4b2a76.pid"
RUN = "20250101T000000Z-77-abcd1234"


def lay_out(
    proc: Path,
    pid: int,
    ppid: int,
    sid: int,
    argv: list[str],
    environ: dict[str, str] | None = None,
    container: bool = True,
    inner: int | None = None,
) -> None:
    """One process as the host's /proc shows it; ``environ`` None: not readable by the session's user."""
    d = proc / str(pid)
    d.mkdir(parents=True)
    comm = Path(argv[0]).name[:15]
    (d / "stat").write_text(f"{pid} ({comm}) S {ppid} {sid} {sid} 0 -1 4194560 0 0 0 0\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (d / "cgroup").write_text(
        f"0::/system.slice/docker-{CONTAINER}.scope\n" if container else "0::/user.slice/user-1000.slice\n"
    )
    (d / "status").write_text(f"Name:\t{comm}\nNSpid:\t{pid}" + (f"\t{inner}" if inner else "") + "\n")
    if environ is not None:
        (d / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in environ.items()))


@pytest.fixture
def shared_container(tmp_path):
    """A dev container with the run's exec and two other execs (a teammate's job, a notebook), as the
    host sees them: the shim (50) outside it, the container's init (60), every exec a session leader."""
    proc = tmp_path / "proc"
    mark = {"GPUVERIFY_RUN_ID": RUN, "PATH": "/usr/bin"}
    lay_out(proc, 50, 1, 50, ["/usr/bin/containerd-shim-runc-v2", "-id", CONTAINER], container=False)
    lay_out(proc, 60, 50, 60, ["/bin/sleep", "infinity"], {}, inner=1)
    # the run: the wrapper (it names the pid file), timeout, the command, its worker
    lay_out(proc, 100, 50, 100, ["sh", "-c", "WRAPPER", PID_FILE, "600", "python3", "t.py"], mark, inner=14)
    lay_out(proc, 101, 100, 100, ["timeout", "-k", "3", "600", "python3", "t.py"], mark, inner=21)
    lay_out(proc, 102, 101, 100, ["python3", "t.py"], mark, inner=22)
    lay_out(
        proc, 103, 60, 100, ["python3", "-m", "worker"], mark, inner=23
    )  # double-forked: init's child, the run's session
    lay_out(proc, 104, 60, 104, ["python3", "-m", "server"], mark, inner=24)  # setsid: only its marker says whose
    # others in the same container
    lay_out(proc, 200, 50, 200, ["bash"], {"PATH": "/usr/bin"}, inner=30)
    lay_out(proc, 201, 200, 200, ["python3", "train.py"], {"PATH": "/usr/bin"}, inner=31)
    lay_out(proc, 300, 50, 300, ["python3", "-m", "ipykernel"], None, inner=40)  # environment not readable here
    return proc


def run_spec(marker: str = RUN) -> list[str]:
    return ["container", "dev", PID_FILE, marker]


def test_in_a_shared_container_only_the_runs_tree_is_its_own(shared_container):
    owner = OwnProcesses(CONTAINER, proc=str(shared_container))
    owner.started(run_spec())
    assert [owner.is_own(p) for p in (102, 101, 100, 103, 104)] == [True] * 5
    assert owner.root_pid == 100, "the wrapper, found by its pid file on its command line"
    assert owner.is_own(201) is False and owner.is_own(200) is False, "another exec of the same container"
    assert owner.is_own(60) is False, "the container's init is not the run's"
    assert owner.is_own(4_000_000) is None, "not visible here: never the run's"


def test_a_detached_child_is_known_by_its_session_before_the_root_is(shared_container):
    owner = OwnProcesses(CONTAINER, proc=str(shared_container))
    owner.started(run_spec())
    assert owner.is_own(103) is True and owner.root_pid == 100


def test_an_unreadable_environment_in_the_container_is_asked_of_the_container(shared_container):
    asked = []

    def ask(pid, run_id):
        asked.append((pid, run_id))
        return False

    owner = OwnProcesses(CONTAINER, proc=str(shared_container), ask=ask)
    owner.started(run_spec())
    assert owner.is_own(300) is False
    assert asked == [(40, RUN)], "by the pid the container numbers it with, once"
    assert owner.is_own(300) is False and len(asked) == 1


def test_where_nothing_can_tell_the_process_is_not_visible_not_own(shared_container):
    for ask in (None, lambda pid, run_id: None, lambda pid, run_id: 1 / 0):
        owner = OwnProcesses(CONTAINER, proc=str(shared_container), ask=ask)
        owner.started(run_spec())
        assert owner.is_own(300) is None


def test_an_unreadable_process_outside_the_container_is_anothers(shared_container):
    lay_out(shared_container, 400, 1, 400, ["python3", "job.py"], None, container=False)
    owner = OwnProcesses(CONTAINER, proc=str(shared_container), ask=lambda pid, run_id: True)
    owner.started(run_spec())
    assert owner.is_own(400) is False


def test_nothing_is_the_runs_before_it_started_and_that_is_not_kept(shared_container):
    owner = OwnProcesses(CONTAINER, proc=str(shared_container))
    assert owner.is_own(102) is False
    owner.started(run_spec())
    assert owner.is_own(102) is True


def test_another_runs_marker_is_not_this_runs(shared_container):
    owner = OwnProcesses(CONTAINER, proc=str(shared_container))
    owner.started(run_spec(marker="another-run"))
    assert owner.is_own(104) is False
    assert owner.is_own(102) is True, "the tree still is"


# -- real processes on this host ----------------------------------------------------------------------


@pytest.fixture
def host_run(tmp_path):
    """A command in its own session (as the host executor starts it) with a child, a double-forked
    grandchild, a detached server in a session of its own, and the run's marker; and an unrelated process."""
    pids = tmp_path / "pids"
    script = (
        "sleep 30 & echo child $! >> $P; "
        "(sleep 31 & echo detached $! >> $P) ; "
        "(setsid sleep 32 & echo server $! >> $P) ; wait"
    )
    env = dict(os.environ, P=str(pids), GPUVERIFY_RUN_ID=RUN)
    command = subprocess.Popen(["sh", "-c", script], env=env, start_new_session=True)
    other = subprocess.Popen(["sleep", "30"])
    deadline = time.monotonic() + 10
    while (not pids.exists() or len(pids.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        time.sleep(0.02)
    found = dict(line.split() for line in pids.read_text().splitlines())
    # the server's pid is printed before its setsid() and exec ran (mid-exec its environment reads
    # empty): wait until it is the sleep, in a session of its own
    server = int(found["server"])
    while time.monotonic() < deadline and (
        os.getsid(server) == command.pid or not Path(f"/proc/{server}/cmdline").read_bytes().startswith(b"sleep")
    ):
        time.sleep(0.02)
    yield command.pid, {k: int(v) for k, v in found.items()}, other.pid
    for pid in (*map(int, found.values()), command.pid, other.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    command.wait()
    other.wait()


def test_on_the_host_the_tree_the_session_and_the_marker_are_the_runs(host_run):
    command, found, other = host_run
    owner = OwnProcesses()
    owner.started(["host", str(command), RUN])
    assert owner.is_own(command) is True and owner.is_own(found["child"]) is True
    assert owner.is_own(found["detached"]) is True, "reparented, still in the command's session"
    assert owner.is_own(found["server"]) is True, "a session of its own, with the run's marker"
    assert owner.is_own(other) is False


def test_on_the_host_without_the_marker_a_new_session_is_not_the_runs(host_run):
    command, found, _ = host_run
    owner = OwnProcesses()
    owner.started(["host", str(command)])
    assert owner.is_own(found["child"]) is True
    assert owner.is_own(found["server"]) is False
