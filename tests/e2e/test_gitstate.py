"""Repo state as git sees it: one rule for the run and `gpuverify doctor`.

Plain git checkouts in tmp_path; test_dirty_run.py has the run and doctor agreeing on it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.place.gitstate import changes, own_output_dirs, repo_state


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True
    )


@pytest.fixture
def checkout(tmp_path) -> Path:
    repo = tmp_path / "aiter"
    harness = repo / "op_tests" / "op_benchmarks" / "triton"
    harness.mkdir(parents=True)
    (harness / "bench_gemm.py").write_text("print('gemm')\n")
    (repo / "README").write_text("aiter\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    return repo


def test_a_clean_checkout_is_clean(checkout):
    state = repo_state(checkout / "op_tests")
    assert state.dirty is False and state.dirty_paths == [] and len(state.sha or "") == 40
    assert state.path == str(checkout)


def test_an_edit_to_a_tracked_bench_file_is_dirty(checkout):
    # the file's name starts with bench_ like the plugin's artifacts; it is still the repo's harness
    (checkout / "op_tests/op_benchmarks/triton/bench_gemm.py").write_text("print('edited')\n")
    state = repo_state(checkout, own_output_dirs(checkout / "tickets"))
    assert state.dirty is True and state.dirty_paths == ["op_tests/op_benchmarks/triton/bench_gemm.py"]


def test_an_untracked_file_named_like_an_artifact_is_dirty_outside_the_tickets_folder(checkout):
    (checkout / "bench_gemm.json").write_text("{}")
    (checkout / "bench_new.py").write_text("x = 1\n")
    state = repo_state(checkout, own_output_dirs(checkout / "tickets"))
    assert state.dirty is True and sorted(state.dirty_paths) == ["bench_gemm.json", "bench_new.py"]


def test_the_tickets_folder_inside_the_checkout_is_the_plugins_own(checkout):
    tickets = checkout / "work" / "tickets"
    (tickets / "T-1").mkdir(parents=True)
    (tickets / "T-1" / "bench_gemm.json").write_text("{}")
    (tickets / "T-1" / "notes.txt").write_text("anything the plugin's folder holds\n")
    assert repo_state(checkout, own_output_dirs(tickets)).dirty is False
    # beside it, in the same untracked parent folder, a file of someone else's shows
    (checkout / "work" / "draft.py").write_text("x = 1\n")
    assert repo_state(checkout, own_output_dirs(tickets)).dirty_paths == ["work/"]


def test_a_tracked_change_inside_the_tickets_folder_still_counts(checkout):
    tickets = checkout / "tickets"
    tickets.mkdir()
    (tickets / "kept.json").write_text("{}")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "artifact committed")
    (tickets / "kept.json").write_text('{"edited": 1}')
    assert changes(checkout, own_output_dirs(tickets)) == [(" M", "tickets/kept.json")]


def test_a_tickets_folder_around_the_checkout_hides_nothing(checkout):
    (checkout / "scratch.py").write_text("x = 1\n")
    # worktrees often live in the ticket folder: the folder holds the checkout, not the other way round
    assert repo_state(checkout, own_output_dirs(checkout.parent)).dirty_paths == ["scratch.py"]


def test_renames_and_odd_names_are_listed_once_each(checkout):
    git(checkout, "mv", "README", "READ ME\tnow")
    (checkout / "new\nline.txt").write_text("x")
    found = changes(checkout)
    assert found == [("R ", "READ ME\tnow"), ("??", "new\nline.txt")]


def test_not_a_checkout(tmp_path):
    state = repo_state(tmp_path)
    assert state.sha is None and state.dirty is None
