"""Files test tools leave in a checkout (.coverage from pytest-cov, caches) never make it dirty,
unless the checkout tracks them."""

from __future__ import annotations

import subprocess

from pytest_gpuverify.place.gitstate import changes


def git(top, *args):
    subprocess.run(
        ["git", "-C", str(top), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True
    )


def test_tool_droppings_do_not_make_a_checkout_dirty_unless_tracked(tmp_path):
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    (top / "kernel.py").write_text("x = 1\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "c")
    for name in (
        ".coverage",
        ".coverage.host.123.456",
        "sub/__pycache__/kernel.cpython-311.pyc",
        ".pytest_cache/v/cache/nodeids",
        ".hypothesis/examples/x",
        ".benchmarks/Linux/0001.json",
    ):
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text("dropped")
    assert changes(top) == []
    (top / "sub" / "notes.txt").write_text("mine")
    assert changes(top) == [("??", "sub/")], "a real untracked file still counts"
    (top / "sub" / "notes.txt").unlink()
    git(top, "add", "-f", ".coverage")
    git(top, "commit", "-qm", "tracks its coverage")
    (top / ".coverage").write_text("changed")
    assert changes(top) == [(" M", ".coverage")], "a tracked one that changed counts"
