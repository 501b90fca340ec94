"""The rules behind --gpu-sync and the workers' command line, on real files and git checkouts (no ssh):
which files a sync sees, which host changes stop it, what the host's side deletes and how it narrows
modes, and how path-valued options reach xdist's workers."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.remote.sync import host_changes
from pytest_gpuverify.remote.syncfiles import visible_files
from pytest_gpuverify.remote.synchost import CheckoutState, Finish, checkout_state, finish, manifest_path
from pytest_gpuverify.remote.workerargs import worker_args


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("GPUVERIFY_ENV", str(tmp_path / "no-env.md"))
    top = tmp_path / "aiter"
    (top / "op_tests").mkdir(parents=True)
    (top / "op_tests" / "test_a.py").write_text("a\n")
    (top / ".gitignore").write_text(".env\ndata/\n")
    git = ["git", "-C", str(top), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return top


def test_visible_files_are_what_git_sees_less_caches_and_own_folders(checkout):
    (checkout / ".env").write_text("TOKEN=1\n")
    (checkout / "data").mkdir()
    (checkout / "data" / "big.bin").write_bytes(b"0" * 1000)
    (checkout / "notes.md").write_text("untracked, not ignored\n")
    (checkout / "__pycache__").mkdir()
    (checkout / "__pycache__" / "x.pyc").write_bytes(b"")
    (checkout / "tickets" / "T").mkdir(parents=True)
    (checkout / "tickets" / "T" / "bench_a.json").write_text("{}")
    (checkout / "op_tests" / "test_a.py").unlink()  # tracked, deleted: nothing to copy
    assert visible_files(checkout, ["tickets"]) == [".gitignore", "notes.md"]


def test_a_host_change_stops_the_sync_unless_the_last_sync_made_it_or_this_one_brings_it():
    state = CheckoutState(
        changes={
            "made_by_sync.py": "s1",
            "edited_here.py": "h1",
            "same_as_local.py": "l1",
            "deleted_by_sync.py": None,
            "deleted_here.py": None,
        },
        manifest={"made_by_sync.py": "s1", "edited_here.py": "s0", "deleted_here.py": "d0"},
    )
    copying = {"made_by_sync.py": "s2", "edited_here.py": "s2", "same_as_local.py": "l1", "deleted_here.py": "d0"}
    assert host_changes(state, copying) == ["edited_here.py"]
    first = CheckoutState(changes={"host_notes.txt": "n1"}, manifest=None)
    assert host_changes(first, {}) == ["host_notes.txt"]


def test_the_hosts_side_deletes_only_inside_the_checkout_narrows_modes_and_keeps_a_manifest(checkout, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (checkout / "link").symlink_to(tmp_path)
    (checkout / "gone" / "deep").mkdir(parents=True)
    (checkout / "gone" / "deep" / "old.py").write_text("old\n")
    (checkout / "op_tests" / "test_a.py").chmod(0o666)
    mask = os.umask(0o077)
    try:
        removed = finish(
            checkout,
            Finish(
                delete=["gone/deep/old.py", "link/outside.txt", "../outside.txt"],
                manifest={"op_tests/test_a.py": "sha"},
            ),
        )
    finally:
        os.umask(mask)
    assert removed == ["gone/deep/old.py"]
    assert outside.exists() and not (checkout / "gone").exists()  # emptied folders go too
    assert stat.S_IMODE((checkout / "op_tests" / "test_a.py").stat().st_mode) == 0o600
    assert manifest_path(checkout).read_text() == '{"op_tests/test_a.py": "sha"}'
    (checkout / "host_notes.txt").write_text("mine\n")
    state = checkout_state(checkout)
    assert state.manifest == {"op_tests/test_a.py": "sha"}
    assert set(state.changes) == {"host_notes.txt", "link"}  # the narrowed mode is no change to git
    assert state.changes["host_notes.txt"] == hashlib.sha256(b"mine\n").hexdigest()
    assert "host_notes.txt" in state.visible and "op_tests/test_a.py" in state.visible


def test_path_valued_options_reach_the_workers_joined_and_the_env_file_stays_here(tmp_path):
    junit, ini = tmp_path / "x.xml", tmp_path / "x.ini"
    junit.write_text("")
    ini.write_text("")
    args = [
        "--gpu-env",
        "/controller/env.md",
        "--junitxml",
        str(junit),
        "-c",
        str(ini),
        "-k",
        "gemm",
        "--gpu-env=/controller/env.md",
        "op_tests/x.py",
        "-v",
        str(tmp_path),
    ]
    assert worker_args(args, ["op_tests/x.py", str(tmp_path)]) == [
        f"--junitxml={junit}",
        f"-c{ini}",
        "-k",
        "gemm",
        "op_tests/x.py",
        "-v",
        str(tmp_path),
    ]
