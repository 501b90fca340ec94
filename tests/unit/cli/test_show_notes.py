"""``gpuverify show``: the reasons a verdict stands on are under "why"; a fact recorded as null (a PASS's
"versions: torch is null") is a note, never a why."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.cli.show import render
from pytest_gpuverify.records.artifact import Artifact, RunRecord

NULL_TORCH = "versions: torch is null: not installed in gpuverify-demo-aiter"


def shown(verdict: str, decided: list[str]) -> list[str]:
    art = Artifact(
        topic="t",
        ts="2026-12-01T10:00:00Z",
        verdict=verdict,
        run=RunRecord(ran=True, exit_code=0, unknowns=[NULL_TORCH]),
        reasons=[*decided, NULL_TORCH],
    )
    return [line.strip() for line in render(art, Path("/t/bench_t.json")).splitlines()]


def test_a_pass_lists_its_null_facts_as_notes_and_no_why() -> None:
    lines = shown("PASS", [])
    assert f"note       {NULL_TORCH}" in lines
    assert not [line for line in lines if line.startswith("why")]


def test_a_fail_lists_what_decided_it_under_why_and_its_null_facts_as_notes() -> None:
    lines = shown("FAIL", ["line 2: checkAllclose failed!"])
    assert "why        line 2: checkAllclose failed!" in lines and f"note       {NULL_TORCH}" in lines
    assert lines.index("why        line 2: checkAllclose failed!") < lines.index(f"note       {NULL_TORCH}")
