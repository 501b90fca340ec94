"""Files every user of a host shares: GPU lock files, ticket folders, artifacts, the readings files."""

from __future__ import annotations

import errno
import multiprocessing
import os
import stat
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_gpuverify.common import files
from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.lease import lock
from pytest_gpuverify.lease.lock import GpuLease, LockError, open_lock_file
from pytest_gpuverify.lease.shared_readings import STALE_S, SharedReadings, remove_stale
from pytest_gpuverify.records.artifact import Artifact, read_artifact

NOBODY = 65534


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@contextmanager
def umask(value: int):
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def recording_open(monkeypatch):
    calls = []
    real = os.open

    def spy(path, flags, *args, **kwargs):
        calls.append(flags)
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(lock.os, "open", spy)
    return calls


# -- lock files: opened like flock(1) ----------------------------------------------------------


def test_an_existing_lock_file_is_opened_read_only_without_o_creat(tmp_path, monkeypatch):
    path = tmp_path / "gpu-0.lock"
    path.write_bytes(b"")
    calls = recording_open(monkeypatch)
    os.close(open_lock_file(path))
    assert len(calls) == 1
    flags = calls[0]
    assert flags & os.O_ACCMODE == os.O_RDONLY and not flags & os.O_CREAT and flags & os.O_CLOEXEC


def test_a_missing_lock_file_is_created_exclusively_with_mode_0666_despite_the_umask(tmp_path, monkeypatch):
    path = tmp_path / "gpu-0.lock"
    calls = recording_open(monkeypatch)
    with umask(0o022):
        lease = GpuLease(path, 0)
        assert lease.try_acquire()
        lease.release()
    assert calls[-1] & (os.O_CREAT | os.O_EXCL) == os.O_CREAT | os.O_EXCL
    assert calls[-1] & os.O_ACCMODE == os.O_RDONLY
    assert mode_of(path) == 0o666


def test_a_lock_file_created_by_another_session_in_between_is_opened_read_only(tmp_path, monkeypatch):
    """EEXIST race: the file appears between our read-only open and our O_EXCL create."""
    path = tmp_path / "gpu-0.lock"
    real = os.open
    seen = []

    def racing(p, flags, *args, **kwargs):
        seen.append(flags)
        if flags & os.O_EXCL and not path.exists():
            path.write_bytes(b"")  # the other session wins the race, with its own mode
            os.chmod(path, 0o644)
        return real(p, flags, *args, **kwargs)

    monkeypatch.setattr(lock.os, "open", racing)
    fd = open_lock_file(path)
    os.close(fd)
    assert [bool(f & os.O_EXCL) for f in seen] == [False, True, False]
    assert mode_of(path) == 0o644, "a file this session did not create is never chmod'ed"


def test_a_lock_file_of_flock_1_under_umask_022_keeps_its_owner_and_mode(tmp_path):
    path = tmp_path / "gpu-0.lock"
    subprocess.run(["sh", "-c", f"umask 022; flock {path} true"], check=True)
    os.chown(path, NOBODY, NOBODY)  # another user's flock(1) made it
    before = os.stat(path)
    lease = GpuLease(path, 0)
    assert lease.try_acquire()
    assert subprocess.run(["flock", "-n", str(path), "true"]).returncode == 1
    lease.release()
    after = os.stat(path)
    assert (after.st_uid, after.st_mode, after.st_ino) == (before.st_uid, before.st_mode, before.st_ino)


def test_an_unreadable_lock_file_names_its_owner_mode_and_the_fix(world_dir, second_user):
    path = world_dir / "gpu-0.lock"
    path.write_bytes(b"")
    os.chmod(path, 0o600)
    code = (
        "import sys; from pytest_gpuverify.lease.lock import GpuLease, LockError\n"
        f"try: GpuLease({str(path)!r}, 0).try_acquire()\nexcept LockError as e: print(e)"
    )
    proc = second_user.run(["python3", "-c", code])
    out = proc.stdout.decode()
    assert f"cannot open GPU lock file {path} (owner root, mode 0600)" in out and "Fix:" in out, proc
    assert len(out.strip().splitlines()) == 1


@contextmanager
def protected_regular(value: int):
    knob = Path("/proc/sys/fs/protected_regular")
    try:
        old = knob.read_text().strip()
    except OSError:
        pytest.skip("no fs.protected_regular in this kernel: the flags are covered by the unit tests above")
    if old != str(value):
        try:
            knob.write_text(str(value))
        except OSError as exc:
            pytest.skip(f"cannot set fs.protected_regular here ({exc}): the flags are covered by the unit tests above")
    try:
        yield
    finally:
        if old != str(value):
            knob.write_text(old)


def test_protected_regular_refuses_o_creat_but_the_lease_opens_another_users_file(world_dir):
    """A sticky world-writable folder (as /var/lock) with another user's lock file in it."""
    locks = world_dir / "locks"
    locks.mkdir()
    os.chmod(locks, 0o1777)
    path = locks / "gpu-0.lock"
    path.write_bytes(b"")
    os.chmod(path, 0o666)
    os.chown(path, NOBODY, NOBODY)
    with protected_regular(1):
        with pytest.raises(PermissionError):  # what opening it with O_CREAT (the old open) gets
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))
        lease = GpuLease(path, 0)
        assert lease.try_acquire()
        # flock(1) by path opens with O_CREAT and is refused here too; through a shell's `<` it is not
        assert subprocess.run(["sh", "-c", f"flock -n 9 9<{path}"]).returncode == 1, "the lease holds it"
        lease.release()
        assert subprocess.run(["sh", "-c", f"flock -n 9 9<{path}"]).returncode == 0
    assert os.stat(path).st_uid == NOBODY


# -- result files and ticket folders ------------------------------------------------------------


def test_artifacts_and_logs_get_one_group_readable_mode_whatever_the_umask(tmp_path):
    with umask(0o077):
        store_artifact(Artifact(topic="x", ts="t"), tmp_path / "T-1" / "bench_x.json", None)
        files.create_result_file(tmp_path / "T-1" / "bench_x.1.log")
        files.write_atomic(tmp_path / "T-1" / "bench_x.1.junit.xml", b"<x/>", mode=files.RESULT_MODE)
    assert files.RESULT_MODE == 0o644
    assert {p.name: mode_of(p) for p in (tmp_path / "T-1").iterdir()} == {
        "bench_x.json": 0o644,
        "bench_x.1.log": 0o644,
        "bench_x.1.junit.xml": 0o644,
    }


def test_a_new_ticket_folder_takes_the_team_folders_permissions(tmp_path):
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    os.chmod(tickets, 0o2775)
    with umask(0o022):
        files.make_dirs(tickets / "T-1" / "sub")
    assert mode_of(tickets / "T-1") == 0o2775 and mode_of(tickets / "T-1" / "sub") == 0o2775
    sticky = tmp_path / "open"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    with umask(0o022):
        files.make_dirs(sticky / "T-2")
    assert mode_of(sticky / "T-2") == 0o1777, "without the sticky bit any local user could replace others' artifacts"
    existing = tickets / "T-3"
    existing.mkdir(mode=0o700)
    files.make_dirs(existing)
    assert mode_of(existing) == 0o2700, "an existing folder is left as it is (setgid from its parent)"


def test_a_ticket_folder_in_a_group_writable_folder_is_the_groups_and_setgid_whatever_the_umask(tmp_path):
    """A team folder of mode 0775 without setgid (made by hand, or by a tool): a ticket folder made in
    it by the Slurm controller, the GPU host's collector or merge is the team's, not 0755 by the umask."""
    from pytest_gpuverify.remote.unran import write_unran
    from pytest_gpuverify.reporting.merge import merge

    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o775)
    os.chown(team, -1, 100)  # a group this (root) user is not in by default: the team's
    with umask(0o077):
        files.make_dirs(team / "T-1" / "slurm")
        path, problem = write_unran(team / "T-2", None, "op_tests/test_x.py::x", "-", "never submitted", "T-2")
        assert problem == "" and path is not None
        said: list[str] = []
        assert merge([team / "T-2"], team / "merged" / "T-2", say=said.append) == 0, said
    for folder in ("T-1", "T-1/slurm", "T-2", "merged", "merged/T-2"):
        st = os.stat(team / folder)
        assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o2775, 100), (folder, oct(st.st_mode), st.st_gid)
    private = tmp_path / "mine"
    private.mkdir(mode=0o755)
    with umask(0o077):
        files.make_dirs(private / "T-1")
    assert mode_of(private / "T-1") == 0o755, "a folder only its owner writes in gives no group rights"


def test_an_unwritable_tickets_folder_is_one_line_naming_it(tmp_path):
    a_file = tmp_path / "tickets"
    a_file.write_text("not a folder")
    with pytest.raises(files.FileProblem) as err:
        files.check_writable_dir(a_file / "T-1")
    msg = str(err.value)
    assert msg.startswith(f"cannot write {a_file} (owner root, mode 0644)") and "Fix:" in msg and "\n" not in msg
    files.check_writable_dir(tmp_path / "new" / "T-1")  # missing folders under a writable one are fine
    assert not (tmp_path / "new").exists(), "the check creates nothing"


def _store_many(args) -> None:
    folder, n, worker = args
    for i in range(n):
        art = Artifact(topic="same", ts=f"{worker}-{i}", notes=[f"{worker}-{i}"])
        store_artifact(art, Path(folder) / "bench_same.json", Path(folder) / ".gpuverify.lock")


def test_concurrent_writers_of_one_topic_lose_no_artifact(tmp_path):
    """Sessions and xdist workers storing the same topic at once: every artifact survives, current or
    moved aside (the moves are taken under the folder's filelock)."""
    workers, each = 6, 8
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(_store_many, [(str(tmp_path), each, w) for w in range(workers)])
    kept = sorted(read_artifact(p).ts for p in tmp_path.glob("bench_same*.json"))
    assert kept == sorted(f"{w}-{i}" for w in range(workers) for i in range(each))
    assert mode_of(tmp_path / ".gpuverify.lock") == 0o666, "every member of the team can take it"


# -- the shared readings files -----------------------------------------------------------------


def test_readings_live_in_the_users_own_folder_and_are_reused(tmp_path):
    a = SharedReadings("host|/locks/gpu-<id>.lock", max_age_s=1.0, directory=tmp_path)
    b = SharedReadings("host|/locks/gpu-<id>.lock", max_age_s=1.0, directory=tmp_path)
    assert a.path == b.path, "every session of a user on a host uses one file"
    a.publish(time.time(), [])
    b.publish(time.time(), [])
    assert sorted(p.name for p in tmp_path.iterdir()) == [a.path.name]
    assert files.user_runtime_dir(tmp_path) == tmp_path / f"gpuverify-{os.getuid()}"
    assert mode_of(tmp_path / f"gpuverify-{os.getuid()}") == 0o700


def test_a_runtime_folder_that_is_not_ours_is_not_used(tmp_path):
    taken = tmp_path / f"gpuverify-{os.getuid()}"
    taken.mkdir()
    os.chown(taken, NOBODY, NOBODY)
    assert files.user_runtime_dir(tmp_path) is None
    os.chown(taken, os.getuid(), os.getgid())
    os.chmod(taken, 0o777)
    assert files.user_runtime_dir(tmp_path) is None, "a folder others write in could feed us readings"


def test_stale_readings_files_of_the_user_are_removed_and_no_one_elses(tmp_path):
    old = time.time() - STALE_S - 60
    uid = os.getuid()
    names = {
        f"gpuverify-readings-{uid}-aaaa.json": (old, uid),  # left by an earlier version: stale, ours
        f"gpuverify-readings-{uid}-aaaa.lock": (old, uid),
        f"gpuverify-readings-{uid}-bbbb.json": (time.time(), uid),  # a running session's: kept
        f"gpuverify-readings-{NOBODY}-cccc.json": (old, NOBODY),  # another user's: never touched
        ".gpuverify-readings-xyz": (old, uid),
        "unrelated.json": (old, uid),
    }
    for name, (mtime, owner) in names.items():
        p = tmp_path / name
        p.write_text("{}")
        os.utime(p, (mtime, mtime))
        os.chown(p, owner, owner)
    assert remove_stale(tmp_path, legacy=True) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"gpuverify-readings-{uid}-bbbb.json", f"gpuverify-readings-{NOBODY}-cccc.json", "unrelated.json"]
    )


def test_the_lease_keeps_close_on_exec_on_both_opens(tmp_path):
    for _existing in (False, True):  # the second open finds the file there
        fd = open_lock_file(tmp_path / "gpu-9.lock")
        try:
            assert not os.get_inheritable(fd)
        finally:
            os.close(fd)


def test_lock_error_for_a_missing_folder_still_names_the_fix(tmp_path):
    with pytest.raises(LockError) as err:
        open_lock_file(tmp_path / "nope" / "gpu-0.lock")
    assert err.value.errno == errno.ENOENT and "folder" in str(err.value) and "Fix:" in str(err.value)
