"""The shipped agent skill page (package data; docs/agents.md quotes the same text)."""

from __future__ import annotations

from importlib.resources import files

SKILL_FILE = "SKILL.md"


def skill_text() -> str:
    return files("pytest_gpuverify.cli.agents").joinpath(SKILL_FILE).read_text(encoding="utf-8")
