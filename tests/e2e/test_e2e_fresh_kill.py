"""A fresh container after a ``kill -9`` of pytest: the session's guard removes the fresh container it
was told about (only one with this run's labels) before the GPU lock goes; without it the container
would linger until its ``sleep`` ended (timeout + 10 min). Real Docker Engine, real guard process."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
import uuid

import pytest
from fresh_containers import foreign, sleeping_in_fresh_container, use_run_row

from pytest_gpuverify.lease.guard import SessionGuard
from pytest_gpuverify.place.ephemeral import OWNER_LABEL, RUN_LABEL

pytestmark = pytest.mark.docker


def gone(client, name: str) -> bool:
    return client.api.containers(all=True, filters={"name": f"^/{name}$"}) == []  # no inspect: no race with a removal


def flock_free(path) -> bool:
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def test_kill_9_of_pytest_removes_its_fresh_container_and_then_frees_the_lock(sandbox):
    use_run_row(sandbox)
    other = foreign(sandbox, f"gpuverify-run-{uuid.uuid4().hex[:8]}", "another-session")
    proc, container = sleeping_in_fresh_container(sandbox)
    assert container.labels[OWNER_LABEL] == "1" and not sandbox.lock_files_free()
    proc.kill()  # SIGKILL: no finally, no atexit of pytest's runs
    proc.wait(timeout=30)
    deadline = time.time() + 60
    while time.time() < deadline and not (gone(sandbox.client, container.name) and sandbox.lock_files_free()):
        # the lock is never free while the container is still there
        assert gone(sandbox.client, container.name) or not sandbox.lock_files_free()
        time.sleep(0.05)
    assert gone(sandbox.client, container.name), "the guard removed the killed session's fresh container"
    assert sandbox.lock_files_free(), "and then let the lock go"
    other.reload()
    assert other.status == "running" and other.labels[RUN_LABEL] == "another-session"


def test_the_guard_removes_only_a_container_with_the_run_labels(sandbox, tmp_path):
    """Armed with `fresh NAME RUN_ID`: a container of that name from another run stays; the run's own
    goes, and the lock duplicates the guard holds stay taken until it is gone."""
    mine = foreign(sandbox, f"gv-14c-mine-{uuid.uuid4().hex[:8]}", "run-mine")
    theirs = foreign(sandbox, f"gv-14c-theirs-{uuid.uuid4().hex[:8]}", "run-theirs")
    fd = os.open(tmp_path / "gpu0.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the session's lock on the GPU
    guard = SessionGuard.start()
    assert guard is not None
    guard.arm(["fresh", mine.name, "run-mine"], [fd])
    guard.arm(["fresh", theirs.name, "run-mine"], [fd])  # told the wrong run: its labels say no
    os.close(fd)  # the session's own descriptor goes, as with a kill -9
    assert not flock_free(tmp_path / "gpu0.lock"), "the guard's duplicate keeps the lock taken"
    guard.proc.stdin.close()
    assert guard.proc.wait(timeout=60) == 0
    assert gone(sandbox.client, mine.name)
    theirs.reload()
    assert theirs.status == "running"
    assert flock_free(tmp_path / "gpu0.lock")
