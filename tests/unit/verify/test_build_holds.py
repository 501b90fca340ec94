"""A ``gpu = true`` build that took a GPU lock of its own records that hold in its build
record, and the overlap check over artifacts (exclusivity.py) sees it, once however many artifacts
list the build."""

from __future__ import annotations

from pathlib import Path

from exclusivity_cases import art, overlaps

from pytest_gpuverify.common.clock import iso_utc
from pytest_gpuverify.records.builds import BuildRecord
from pytest_gpuverify.verify.exclusivity import holds_of

T = 1_800_000_000.0


def with_build(a, gpus, start, end, name="tune"):
    a.builds = [
        BuildRecord(
            name=name,
            command="sh tune.sh",
            gpu=True,
            gpus=gpus,
            exit_code=0,
            output=f"build_{name}.x.log",
            lock_taken=iso_utc(start),
            lock_released=iso_utc(end),
        )
    ]
    return a


def test_a_builds_own_hold_overlapping_another_run_is_named():
    built = with_build(art("h1", [0], T + 10, T + 20), [0], T, T + 5)  # built, let go, then ran: no overlap of its own
    assert overlaps(built) == []
    other = art("h1", [0], T + 4, T + 6)  # another session's run on GPU 0 while the build held it
    (o,) = overlaps(built, other)
    assert (o.first.path.name, o.second.path.name) == ("bench_0.json", "bench_1.json")
    assert "(build tune, build_tune.x.log)" in o.describe() and abs(o.seconds - 1.0) < 1e-6
    assert overlaps(built, art("h1", [1], T + 4, T + 6)) == [], "another GPU"
    assert overlaps(built, art("h1", [0], T + 5, T + 10)) == [], "touching is a handoff"


def test_one_build_listed_in_two_artifacts_is_one_hold():
    first = with_build(art("h1", [0], T + 10, T + 20), [0], T, T + 5)
    second = with_build(art("h1", [0], T + 20, T + 30), [0], T, T + 5)  # the same build, stood on by both
    assert overlaps(first, second) == []


def test_a_build_under_the_runs_own_lock_adds_no_hold_and_a_bad_hold_is_said():
    a = art("h1", [0], T, T + 10)
    a.builds = [BuildRecord(name="tune", command="sh tune.sh", gpu=True, gpus=[0], exit_code=0)]
    holds, why = holds_of(a, Path("a.json"))
    assert why is None and [h.what for h in holds] == [""]
    bad = with_build(art("h1", [0], T, T + 10), [0], T + 5, T + 1)
    assert holds_of(bad, Path("a.json"))[1] == (
        f"build tune: the timeline ends ({iso_utc(T + 1)}) before it starts ({iso_utc(T + 5)})"
    )
