"""Installed, the plugin is loaded by every pytest run of the environment; without --gpu-verify it must
cost nothing but its hooks' early returns: none of its face nor its engine (pydantic's models, the env file, the
artifact) is imported, and the run's own tests, fixtures and markers behave as without it."""

from __future__ import annotations

import json
import os
import subprocess

from session_cmd import PYTEST

CONFTEST = """
import json, os, sys

def pytest_sessionfinish(session):
    with open(os.environ["GV_MODULES_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def test_a_run_without_gpu_verify_imports_none_of_the_engine(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_plain.py").write_text(
        "import pytest\n\n@pytest.mark.gpu\ndef test_plain(tmp_path):\n    assert tmp_path.is_dir()\n"
    )
    out = tmp_path / "modules.json"
    r = subprocess.run(
        [*PYTEST, "-q", "--strict-markers", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, GV_MODULES_OUT=str(out)),
    )
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr  # the gpu marker is still known
    modules = set(json.loads(out.read_text()))
    assert "pytest_gpuverify.plugin" in modules  # loaded, as installed
    heavy = sorted(
        m
        for m in modules
        if m.split(".")[0] in ("pydantic", "pydantic_core", "docker")
        or m.startswith(
            (
                "pytest_gpuverify.face",
                "pytest_gpuverify.engine",
                "pytest_gpuverify.config.envfile",
                "pytest_gpuverify.config.targets",
                "pytest_gpuverify.config.options",
            )
        )
    )
    assert heavy == []
