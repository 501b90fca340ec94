"""GitHub's "Re-run failed jobs" keeps the run id and counts GITHUB_RUN_ATTEMPT up: the shards of every
attempt are one run, and each shard counts from its latest attempt (reporting/shard_check.py)."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.config.shards import logical_run, run_attempt
from pytest_gpuverify.records.scheduling import ShardRecord
from pytest_gpuverify.reporting.shard_check import shard_lines, superseded


def record(
    index: int, session: str, attempt: int | None, run: str = "4711", run_from: str = "GITHUB_RUN_ID"
) -> ShardRecord:
    return ShardRecord(
        index=index,
        count=3,
        read_from=f"--gpu-shard {index}/3",
        run=run,
        run_from=run_from,
        attempt=attempt,
        plan="p1",
        sizes=[1, 1, 1],
        session=session,
    )


def test_the_attempt_is_read_apart_from_the_run():
    assert run_attempt({"GITHUB_RUN_ATTEMPT": "3"}) == 3
    assert run_attempt({}) is None and run_attempt({"GITHUB_RUN_ATTEMPT": "x"}) is None
    assert logical_run("4711", "GITHUB_RUN_ID", 2) == ("4711", 2)
    # artifacts written while the attempt was a suffix of the run id read as the same run
    assert logical_run("4711.2", "GITHUB_RUN_ID", None) == ("4711", 2)
    assert logical_run("nightly.2", "--gpu-shard-run", None) == ("nightly.2", 0)


def test_a_rerun_shard_replaces_its_failed_attempt_and_the_run_is_whole():
    first = [(record(i, f"a1s{i}", 1), Path(f"attempt1/shard{i}/bench_t{i}.json")) for i in range(3)]
    rerun = (record(1, "a2s1", 2), Path("attempt2/shard1/bench_t1.json"))
    lines, whole = shard_lines([*first, rerun])
    assert whole, lines
    assert lines == [
        "shards of run 4711: 3 of 3 arrived, each once and whole (attempts 1, 2: the latest of each shard counts)"
    ]
    assert superseded([*first, rerun]) == {
        Path("attempt1/shard1/bench_t1.json"): "shard 1/3 of run 4711 ran again in attempt 2; this is attempt 1's"
    }


def test_only_the_rerun_arrived_names_the_others_missing():
    lines, whole = shard_lines([(record(1, "a2s1", 2), Path("a2/bench_t1.json"))])
    assert not whole
    assert "MISSING shard 0/3 of run 4711: none of its 1 GPU target(s) has an artifact" in lines


def test_old_artifacts_with_the_attempt_in_the_run_id_merge_with_new_ones():
    old = [(record(i, f"s{i}", None, run="4711.1"), Path(f"old/bench_t{i}.json")) for i in range(3)]
    new = (record(2, "n2", 2), Path("new/bench_t2.json"))
    lines, whole = shard_lines([*old, new])
    assert whole and lines[0].startswith("shards of run 4711: 3 of 3 arrived"), lines


def test_one_shard_twice_in_the_same_attempt_is_still_twice():
    same = [
        (record(0, "x", 2), Path("a/bench_t0.json")),
        (record(0, "y", 2), Path("b/bench_t0.json")),
        (record(1, "s1", 1), Path("a/bench_t1.json")),
        (record(2, "s2", 1), Path("a/bench_t2.json")),
    ]
    lines, whole = shard_lines(same)
    assert not whole and lines[0].startswith("TWICE shard 0/3 of run 4711: it ran in 2 sessions"), lines
