"""The demo's repo is its own pytest root: under a project (``.demo/`` in a clone of this one) pytest
takes neither the project's rootdir nor its configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_gpuverify.cli import demo


def test_the_demo_repo_is_its_own_pytest_root_inside_a_project(tmp_path: Path) -> None:
    project = tmp_path / "clone"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--no-such-option"\n')
    repo = demo.make_repo(project / ".demo" / "repos" / "aiter", own_root=True)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "op_tests/test_gemm_a8w8.py"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--no-such-option" not in proc.stderr, proc.stderr  # the project's configuration was not read
    header = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-p", "no:cacheprovider", "op_tests/test_gemm_a8w8.py"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert f"rootdir: {repo}" in header and "configfile: pytest.ini" in header, header
    assert (
        subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    )


def test_a_repo_with_its_own_configuration_keeps_it(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "tests").mkdir(parents=True)
    (source / "tox.ini").write_text("[pytest]\nmarkers = gpu\n")
    repo = demo.make_repo(tmp_path / "repo", source, own_root=True)
    assert not (repo / "pytest.ini").exists() and (repo / "tox.ini").read_text() == "[pytest]\nmarkers = gpu\n"
