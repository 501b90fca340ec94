"""The artifact is built once, from the results of the phases that ran (engine/phases.py,
engine/outcome.build_artifact); the verdict reads the same run record the artifact stores."""

from __future__ import annotations

import time
from pathlib import Path

from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.engine.outcome import build_artifact, target_record
from pytest_gpuverify.engine.phases import Begun, Checked, Decided, Executed, Fresh, Leased, Placed, Results
from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.records.artifact import AbRecord, RepoRecord, RunRecord, RunSlice, read_artifact


def begun(tmp_path: Path, **target) -> Begun:
    t = Target(name="t", kind="aiter-op-test", topic="t", **target)
    return Begun(
        target=t,
        record=target_record(t, None),
        topic="t",
        stamp="S",
        ts="2026-01-01T00:00:00.000Z",
        t0=time.monotonic(),
        host="h",
        artifact_path=tmp_path / "bench_t.json",
        notes=["session note"],
        collected="2026-01-01T00:00:00.000Z",
    )


def decided(results: Results, run: RunRecord) -> Decided:
    verdict, reasons = verdict_and_reasons(run, None, None, results.begun.record)
    return Decided(run, verdict, reasons)


def test_a_target_blocked_in_place_is_inconclusive_with_the_reason_and_nothing_of_later_phases(tmp_path):
    r = Results(begun(tmp_path, dtype="fp8"))
    r.placed = Placed(
        blocked=["repo /r is dirty (x). Fix: commit"],
        repo=RepoRecord(path="/r", dirty=True),
        notes=["resolved"],
        container="c1",
    )
    r.decided = decided(r, RunRecord(blocked=list(r.placed.blocked)))
    art = build_artifact(r)
    assert (art.verdict, art.reasons) == ("INCONCLUSIVE", ["repo /r is dirty (x). Fix: commit"])
    assert art.run == r.decided.run and art.target is not None and art.target.dtype == "fp8"
    assert art.notes == ["session note", "resolved"] and art.container == "c1" and art.repos[0].path == "/r"
    assert art.timeline is not None and art.timeline.pick_started is None and art.timeline.lock_taken is None
    assert art.raw_output is None and art.gpus == [] and art.workdir is None and art.exit_code is None
    store_artifact(art, tmp_path / "a.json", None)  # a valid artifact, read back the same
    assert read_artifact(tmp_path / "a.json") == art


def test_a_run_row_whose_container_did_not_start_records_its_pick_and_release_but_no_hold(tmp_path):
    r = Results(begun(tmp_path))
    r.placed = Placed(container="row")
    r.leased = Leased(
        pick_started="2026-01-01T00:00:01.000Z",
        lock_taken="2026-01-01T00:00:02.000Z",
        lock_released="2026-01-01T00:00:03.000Z",
        owned=True,
    )
    r.fresh = Fresh(blocked=["could not create a container"])
    r.decided = decided(r, RunRecord(blocked=list(r.fresh.blocked)))
    art = build_artifact(r)
    assert art.timeline is not None
    assert (art.timeline.pick_started, art.timeline.lock_taken, art.timeline.lock_released) == (
        "2026-01-01T00:00:01.000Z",
        None,
        "2026-01-01T00:00:03.000Z",
    )
    assert art.fresh_container is None and art.container == "row" and art.reasons == ["could not create a container"]


def test_an_ab_run_records_its_order_and_base_caches_from_the_execute_phase(tmp_path):
    r = Results(begun(tmp_path))
    r.placed = Placed(container="c1", wt="/w")
    r.leased = Leased(pick_started="p", lock_taken="t", lock_released="r", owned=True)
    r.checked = Checked(workdir="/w", ab=AbRecord(base_ref="HEAD~1", base_sha="a" * 40))
    raw = tmp_path / "bench_t.S.log"
    raw.write_bytes(b"line\n")
    r.executed = Executed(
        ran=True,
        raw_path=raw,
        command="python3 x.py",
        notes=["cold caches removed"],
        runs=[RunSlice(run=1, side="A", exit_code=0), RunSlice(run=1, side="B", exit_code=0)],
        base_cache_dirs={"AITER_JIT_DIR": "/tmp/a"},
        command_started="cs",
        command_ended="ce",
    )
    r.decided = decided(r, RunRecord(ran=True, exit_code=0))
    art = build_artifact(r)
    assert art.ab is not None and art.ab.order == ["A1", "B1"] and art.ab.base_cache_dirs == {"AITER_JIT_DIR": "/tmp/a"}
    assert r.checked.ab is not None and r.checked.ab.order == [], "the check phase's record is not changed"
    assert [s.side for s in art.runs] == ["A", "B"] and art.raw_output == raw.name and art.raw_output_bytes == 5
    assert art.timeline is not None and (art.timeline.lock_taken, art.timeline.command_started) == ("t", "cs")
    assert art.notes == ["session note", "cold caches removed"] and art.workdir == "/w"
    assert art.verdict == "INCONCLUSIVE" and "no readable correctness result in the output" in art.reasons
