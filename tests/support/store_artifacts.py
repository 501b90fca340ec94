"""Artifacts that pass ``gpuverify check`` without a GPU or a session, for the history store's writer tests and
bench (tests/e2e/test_history_store.py, bench/history_writers.py): a run that never started (INCONCLUSIVE with
the re-derived reason), each made distinct by its time."""

from __future__ import annotations

from pathlib import Path


def never_ran(folder: Path, n: int) -> Path:
    from pytest_gpuverify.records.artifact import Artifact, RunRecord, TargetRecord

    path = folder / f"A{n}" / "bench_w.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    art = Artifact(
        topic="w",
        ts=f"2026-03-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        verdict="INCONCLUSIVE",
        reasons=["the command never ran"],
        run=RunRecord(ran=False),
        target=TargetRecord(name="w", kind="bench"),
    )
    path.write_text(art.model_dump_json())
    return path
