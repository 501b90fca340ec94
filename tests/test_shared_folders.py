"""Folders a run shares with other local users: world-writable tickets roots and the user's own folder,
tried with a real second Unix user (conftest.second_user)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_gpuverify.cli.doctor import DoctorReport, _tickets
from pytest_gpuverify.engine import files
from pytest_gpuverify.engine.artifact import Artifact, store_artifact
from pytest_gpuverify.place.caches import plan_caches


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
    plan = plan_caches("/work/wt", cold=False, run_id="r1", on_host=True)
    assert not plan.root.startswith("/tmp/gpuverify/"), plan.root
    own = files.private_folder()
    assert Path(plan.root).is_relative_to(own.path) and own.path != squat and own.path.parent == open_root
    assert os.stat(own.path).st_uid == os.getuid() and mode_of(own.path) == 0o700
    assert own.squatted is not None and str(squat) in own.squatted and f"owner {second_user.name}" in own.squatted
    cold = plan_caches("/work/wt", cold=True, run_id="r2", on_host=True)
    assert not cold.root.startswith("/tmp/gpuverify/") and Path(cold.root).is_relative_to(own.path)
