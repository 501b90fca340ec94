"""The version users see is one: ``pytest_gpuverify.__version__`` (which pyproject.toml reads), what
``gpuverify --version`` prints, and CHANGELOG.md's top heading."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest_gpuverify

ROOT = Path(__file__).resolve().parents[2]


def test_the_changelogs_top_heading_is_the_packages_version() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings, "CHANGELOG.md has no version heading (## X.Y.Z)"
    assert headings[0] == pytest_gpuverify.__version__, (
        f"CHANGELOG.md's top heading is {headings[0]}, the package is {pytest_gpuverify.__version__}: "
        "add a heading for the new version (or correct __version__ in pytest_gpuverify/__init__.py)"
    )


def test_gpuverify_version_prints_it() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "--version"], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0 and res.stdout.strip() == f"pytest-gpuverify {pytest_gpuverify.__version__}"


def test_pyproject_takes_the_version_from_the_package() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in text and 'version = {attr = "pytest_gpuverify.__version__"}' in text
    assert not re.search(r"^version = \"", text, re.M), "a second copy of the version in pyproject.toml"
