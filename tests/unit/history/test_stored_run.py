"""What the history store keeps of an artifact (history/records.py): one value per process, as compare
counts runs (parsers/figures.process_values), and the dirty state of the commit it stands for, an A/B
artifact's head's included; a run of unknown state is never a result of its commit (history/series.py)."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.history.records import commit_of, stored_run
from pytest_gpuverify.history.series import counts, target_histories
from pytest_gpuverify.parsers.figures import process_values
from pytest_gpuverify.records.artifact import AbRecord, Artifact, PerfRow, RepoRecord

HEAD, BASE = "b" * 40, "a" * 40


def artifact(rows: list[PerfRow], repos: list[RepoRecord], ab: AbRecord | None = None) -> Artifact:
    return Artifact(topic="gemm", ts="2026-01-02T03:04:05", verdict="PASS", perf=rows, repos=repos, ab=ab)


def stored(art: Artifact):
    return stored_run(art, Path("/t/bench_gemm.json"), "0" * 64, "main")


def test_a_harness_s_rounds_in_one_process_are_one_value() -> None:
    rounds = [PerfRow(shape="M=16", name="ck", us_median=us) for us in (10.0, 10.4, 9.8, 10.2, 30.0)]
    (row,) = stored(artifact(rounds, [RepoRecord(path="/r", sha=HEAD, dirty=False)])).rows
    assert (row.values, row.median, row.cv) == ([10.2], 10.2, None)


def test_repeated_runs_are_one_value_each_and_only_the_head_side_of_an_ab() -> None:
    rows = [
        PerfRow(shape="M=16", name="ck", us_median=us, run=run, side=side)
        for side, base in (("A", 20.0), ("B", 10.0))
        for run in (1, 2, 3)
        for us in (base + run, base + run + 0.5)
    ]
    ab = AbRecord(base_ref="main", base_sha=BASE, head_sha=HEAD)
    (row,) = stored(artifact(rows, [RepoRecord(path="/r", sha=HEAD, dirty=False)], ab)).rows
    assert row.values == [11.25, 12.25, 13.25]  # each run's two rows: their median; side A left out
    assert process_values([r for r in rows if r.side == "B"])[(None, "M=16", "ck", None, "us")] == {
        1: [11.0, 11.5],
        2: [12.0, 12.5],
        3: [13.0, 13.5],
    }


def test_an_ab_head_s_dirty_state_is_stored_and_a_dirty_head_is_no_result() -> None:
    ab = AbRecord(base_ref="main", base_sha=BASE, head_sha=HEAD)
    rows = [PerfRow(shape="M=16", name="ck", us_median=10.0, run=1, side="B")]
    dirty = artifact(rows, [RepoRecord(path="/r", sha=HEAD, dirty=True, dirty_paths=["k.py"])], ab)
    clean = artifact(rows, [RepoRecord(path="/r", sha=HEAD, dirty=False)], ab)
    unknown = artifact(rows, [], ab)  # no repo record of the head: its state is not known
    assert [commit_of(a) for a in (dirty, clean, unknown)] == [(HEAD, True), (HEAD, False), (HEAD, None)]
    runs = [stored(a) for a in (dirty, clean, unknown)]
    assert [r.dirty for r in runs] == [True, False, None]
    assert [counts(r) for r in runs] == [False, True, False]
    (history,) = target_histories(runs)
    assert history.runs == 1  # the clean one only


def test_a_plain_run_s_state_as_its_repo_records_it() -> None:
    rows = [PerfRow(shape="M=16", name="ck", us_median=10.0)]
    assert commit_of(artifact(rows, [RepoRecord(path="/r", sha=HEAD, dirty=True)])) == (HEAD, True)
    assert counts(stored(artifact(rows, [RepoRecord(path="/r", sha=HEAD, dirty=False)])))
    assert not counts(stored(artifact(rows, [])))  # no repo: no commit, no known state
