"""pytest finds its rootdir and ini file before any plugin's options are known: a path given after a
space to one of ours (``--gpu-history /srv/h.db``) is read there as a test path and may move the rootdir
and lose the ini file. No plugin can take part in that search (it runs before entry-point plugins load),
so the session says so in one line with the fix (``--gpu-history=FILE``); the ``=`` spelling, or a
value inside the project, says nothing. Real pytest sessions in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    mine: the project's own marker\n")
    (root / "tests" / "test_a.py").write_text("import pytest\n\n@pytest.mark.mine\ndef test_a():\n    pass\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "history.db").write_bytes(b"")
    (tmp_path / "store" / "env.md").write_text("# env\n")
    return root


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("option, name", [("--gpu-history", "history.db"), ("--gpu-env", "env.md")])
def test_a_path_after_a_space_that_moves_the_rootdir_is_said_once(project: Path, option: str, name: str) -> None:
    value = str(project.parent / "store" / name)
    proc = pytest_in(project, option, value)
    said = [line for line in proc.stderr.splitlines() if line.startswith("gpuverify: pytest took its rootdir")]
    assert said == [
        f"gpuverify: pytest took its rootdir from '{option} {value}': {project.parent} (ini file none), "
        f"not {project} (ini file {project / 'pytest.ini'}). Fix: write {option}={value}"
    ], proc.stderr
    assert f"rootdir: {project.parent}\n" in proc.stdout  # what the line warns of: the ini file is lost


def test_the_equals_spelling_and_a_value_in_the_project_say_nothing(project: Path) -> None:
    value = str(project.parent / "store" / "history.db")
    quiet = pytest_in(project, f"--gpu-history={value}")
    assert "took its rootdir" not in quiet.stderr and f"rootdir: {project}\nconfigfile: pytest.ini" in quiet.stdout
    (project / "history.db").write_bytes(b"")
    inside = pytest_in(project, "--gpu-history", "history.db")
    assert "took its rootdir" not in inside.stderr and f"rootdir: {project}\nconfigfile: pytest.ini" in inside.stdout
    with_tests = pytest_in(project, "tests", "--gpu-history", value)  # the test path finds the ini file anyway
    assert "took its rootdir" not in with_tests.stderr and "configfile: pytest.ini" in with_tests.stdout
