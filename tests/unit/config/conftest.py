"""Fixtures the tests of the run's configuration share."""

from __future__ import annotations

from pathlib import Path

import pytest
from declaration_cases import FILES


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repo holding the files declarations name, one of each kind."""
    root = tmp_path / "repo"
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("print('hi')\n")
    return root
