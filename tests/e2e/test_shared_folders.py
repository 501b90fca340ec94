"""Folders a run shares with other local users: world-writable tickets roots and the user's own folder,
tried with a real second Unix user (conftest.second_user)."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_gpuverify.cli.doctor import DoctorReport, _tickets
from pytest_gpuverify.common import files
from pytest_gpuverify.place.caches import plan_caches
from pytest_gpuverify.records.artifact import Artifact, read_artifact, utc_now


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_root(world_dir):
    """A tickets root like /tmp or a team scratch: every local user writes in it, sticky."""
    root = world_dir / "tickets"
    root.mkdir()
    os.chmod(root, 0o1777)
    return root


def test_a_ticket_folder_in_a_world_writable_root_keeps_the_sticky_bit(open_root, second_user):
    folder, _ = files.result_folder(open_root, "T-1", Path.cwd())
    files.make_dirs(folder)
    assert mode_of(folder) == 0o1777
    art = Artifact(topic="x", ts="root's run")
    from pytest_gpuverify.engine.store import store_artifact

    store_artifact(art, folder / "bench_x.json", open_root / ".gpuverify.lock")
    gone = second_user.run(["rm", "-f", str(folder / "bench_x.json")])
    replaced = second_user.run(["mv", "-f", str(folder / "bench_x.json"), str(folder / "elsewhere.json")])
    assert gone.returncode != 0 and replaced.returncode != 0, "another user removed or moved root's artifact"
    assert (folder / "bench_x.json").exists()


def test_a_world_writable_folder_without_the_sticky_bit_is_refused_with_the_fix(open_root, second_user):
    os.chmod(open_root, 0o777)
    with pytest.raises(files.FileProblem) as err:
        files.result_folder(open_root, "T-1", Path.cwd())
    assert f"`chmod +t {open_root}`" in str(err.value) and "\n" not in str(err.value)
    os.chmod(open_root, 0o1777)
    made_by_peer = open_root / "T-2"
    assert second_user.run(["sh", "-c", f"umask 0; mkdir {made_by_peer}"]).returncode == 0
    with pytest.raises(files.FileProblem, match=f"chmod \\+t {made_by_peer}"):  # a ticket folder of mode 0777
        files.result_folder(open_root, "T-2", Path.cwd())


def test_doctor_says_whether_the_tickets_root_has_the_sticky_bit(open_root):
    env = SimpleNamespace(resources=SimpleNamespace(tickets=open_root))
    report = DoctorReport()
    _tickets(report, env)
    assert report.problems == [] and "with the sticky bit" in report.lines[0], report.lines
    os.chmod(open_root, 0o777)
    report = DoctorReport()
    _tickets(report, env)
    assert report.problems == [f"tickets folder {open_root} is writable by every user without the sticky bit"]
    assert f"chmod +t {open_root}" in report.lines[0]


def test_a_squatted_private_folder_gives_a_fresh_one_never_a_shared_path(open_root, second_user, monkeypatch):
    """Another user made /tmp/gpuverify-<our uid> first: caches of a run on the host go to a fresh
    folder of ours (0700), never the fixed /tmp/gpuverify another user could own too."""
    squat = open_root / f"gpuverify-{os.getuid()}"
    assert second_user.run(["mkdir", "-m", "0777", str(squat)]).returncode == 0
    monkeypatch.setattr(tempfile, "tempdir", str(open_root))
    plan = plan_caches("/work/wt", cold=False, run_id="r1", kind="aiter-op-test", on_host=True)
    assert not plan.root.startswith("/tmp/gpuverify/"), plan.root
    own = files.private_folder()
    assert Path(plan.root).is_relative_to(own.path) and own.path != squat and own.path.parent == open_root
    assert os.stat(own.path).st_uid == os.getuid() and mode_of(own.path) == 0o700
    assert own.squatted is not None and str(squat) in own.squatted and f"owner {second_user.name}" in own.squatted
    cold = plan_caches("/work/wt", cold=True, run_id="r2", kind="aiter-op-test", on_host=True)
    assert not cold.root.startswith("/tmp/gpuverify/") and Path(cold.root).is_relative_to(own.path)


# -- the tickets folder's lock -----------------------------------------------------------------


def test_a_held_folder_lock_is_named_and_waited_for_only_a_short_time(open_root, second_user):
    """Another user holds <tickets>/.gpuverify.lock (a stuck shell): the wait shows a line naming
    the holder's pid and user after about a second, ends after the bound, and the artifact is
    still written, with a note."""
    from pytest_gpuverify.engine.store import store_artifact
    from pytest_gpuverify.lease.lock import lock_holders, lock_id

    lock_file = open_root / ".gpuverify.lock"
    holder = second_user.popen(["flock", str(lock_file), "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while (lock_holders() or {}).get(lock_id(lock_file)) is None:
            assert time.monotonic() < deadline, "the other user's flock never took the lock"
            time.sleep(0.05)
        holder_pid = (lock_holders() or {})[lock_id(lock_file)]
        lines: list[str] = []
        art = Artifact(topic="x", ts=utc_now())
        start = time.monotonic()
        path = store_artifact(art, open_root / "T-1" / "bench_x.json", lock_file, on_wait=lines.append, wait_s=2.5)
        took = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert 2.5 <= took < 5, took
    shown = [line for line in lines if line]
    assert len(shown) == 1 and f"pid {holder_pid} ({second_user.name})" in shown[0] and str(lock_file) in shown[0]
    assert lines[-1] == "", "the live line is cleared after the wait"
    written = read_artifact(path)
    assert any(
        f"written without the folder lock {lock_file}: held by pid {holder_pid} ({second_user.name})" in note
        for note in written.notes
    ), written.notes


def test_the_folder_lock_is_not_held_while_the_artifact_is_serialized(tmp_path, monkeypatch):
    """Only the moves happen under the lock: the artifact is staged before the lock is taken."""
    from pytest_gpuverify.engine import store
    from pytest_gpuverify.lease.lock import is_locked_elsewhere

    lock_file = tmp_path / ".gpuverify.lock"
    seen = []
    real_dump = store.dump_artifact
    monkeypatch.setattr(
        store, "dump_artifact", lambda a: (seen.append(is_locked_elsewhere(lock_file)), real_dump(a))[1]
    )
    store.store_artifact(Artifact(topic="x", ts=utc_now()), tmp_path / "T-1" / "bench_x.json", lock_file)
    assert seen == [False]


# -- where an artifact goes --------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path):
    """A small tmpfs, filled up: every new write fails with ENOSPC."""
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        (mount / "T-1").mkdir()
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_an_artifact_the_full_disk_cannot_take_is_kept_in_the_users_folder(full_disk, tmp_path, monkeypatch):
    from pytest_gpuverify.engine.store import store_or_keep_elsewhere

    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    asked = full_disk / "T-1" / "bench_x.json"
    art = Artifact(topic="x", ts=utc_now(), verdict="PASS")
    where, problem = store_or_keep_elsewhere(art, asked, full_disk / ".gpuverify.lock")
    assert not asked.exists() and where.is_relative_to(files.private_folder().path), where
    assert read_artifact(where).verdict == "PASS" and any(str(asked) in note for note in read_artifact(where).notes)
    assert problem is not None and str(asked.parent) in problem and f"written to {where} instead" in problem
    assert "No space left on device" in problem
    assert [p.name for p in (full_disk / "T-1").iterdir()] == [], "no half-written file is left where it failed"


def test_the_summary_shows_each_artifacts_final_name(tmp_path):
    """Artifacts are written after the targets reported: the summary line points at the name the
    artifact really got, never at a name that holds nothing (or another session's run)."""
    from pytest_gpuverify.face.terminal import VerdictSummary

    asked, stored = tmp_path / "T-1" / "bench_x.json", tmp_path / "own" / "bench_x.json"
    outcome = SimpleNamespace(
        artifact_path=asked,
        stored_path=stored,
        target=SimpleNamespace(name="op_tests/x.py"),
        artifact=Artifact(topic="x", ts=utc_now(), verdict="PASS"),
    )
    summary = VerdictSummary(lambda: SimpleNamespace(outcomes=[outcome]))
    summary.pytest_runtest_logreport(
        SimpleNamespace(
            when="call",
            nodeid="op_tests/x.py::x",
            location=("op_tests/x.py", 0, ""),
            user_properties=[("gpuverify_verdict", "PASS"), ("gpuverify_artifact", str(asked))],
        )
    )
    lines: list[str] = []
    summary.pytest_terminal_summary(
        SimpleNamespace(
            section=lambda *a, **k: None,
            line=lambda text, **k: lines.append(text),
            config=SimpleNamespace(getoption=lambda *a, **k: False),
        )
    )
    assert len(lines) == 1 and lines[0].endswith(f"-> {stored}"), lines


def test_concurrent_sessions_of_one_topic_each_keep_their_own_name(tmp_path):
    """Two sessions ran the same topic at once: the one that ends second does not move the other's
    artifact aside (the name that session printed would then hold another run); it takes a free name."""
    from pytest_gpuverify.engine.store import store_artifact

    folder, lock_file = tmp_path / "T-1", tmp_path / ".gpuverify.lock"
    earlier = store_artifact(Artifact(topic="x", ts=utc_now(), notes=["earlier"]), folder / "bench_x.json", lock_file)
    time.sleep(0.05)
    first = Artifact(topic="x", ts=utc_now(), notes=["first"])  # began first, ends last
    time.sleep(0.05)
    second = Artifact(topic="x", ts=utc_now(), notes=["second"])
    second_path = store_artifact(second, folder / "bench_x.json", lock_file)
    first_path = store_artifact(first, folder / "bench_x.json", lock_file)
    assert first_path != second_path
    assert read_artifact(second_path).notes == ["second"] and read_artifact(first_path).notes == ["first"]
    assert second_path == earlier == folder / "bench_x.json", "a run that began later moves an earlier one aside"
    assert sorted(read_artifact(p).notes[0] for p in folder.glob("bench_x*.json")) == ["earlier", "first", "second"]


def test_an_xdist_controller_shows_where_its_workers_artifacts_really_went(tmp_path):
    """Workers write their artifacts after their reports reached the controller: each worker says,
    as it ends, where each went and what it could not write where asked; the controller's summary
    shows the final names and the problems, and its exit is non-zero."""
    from pytest_gpuverify.face.roles import DistController

    asked, kept = tmp_path / "T-1" / "bench_x.json", tmp_path / "own" / "bench_x.json"
    controller = DistController(SimpleNamespace(getoption=lambda *a, **k: None, getini=lambda *a: None))
    controller.summary.pytest_runtest_logreport(
        SimpleNamespace(
            when="call",
            nodeid="op_tests/x.py::x",
            location=("op_tests/x.py", 0, ""),
            user_properties=[("gpuverify_verdict", "PASS"), ("gpuverify_artifact", str(asked))],
        )
    )
    controller.pytest_testnodedown(
        SimpleNamespace(
            workeroutput={
                "gpuverify_stored": {str(asked): str(kept)},
                "gpuverify_write_problems": [
                    f"the artifact could not be written to {asked} (full); it was written to {kept} instead"
                ],
            }
        ),
        None,
    )
    lines: list[str] = []
    controller.summary.pytest_terminal_summary(
        SimpleNamespace(
            section=lambda *a, **k: None,
            line=lambda text, **k: lines.append(text),
            config=SimpleNamespace(getoption=lambda *a, **k: False),
        )
    )
    assert lines[0].endswith(f"-> {kept}") and f"written to {kept} instead" in lines[1], lines
    session = SimpleNamespace(exitstatus=0)
    finish = controller.pytest_sessionfinish(session, 0)
    next(finish)
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
