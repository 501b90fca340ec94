"""A stored trace or profile is never named like an artifact: report, merge, durations and history add
take every ``bench_*.json`` of a folder as one."""

from __future__ import annotations

from fnmatch import fnmatch

from pytest_gpuverify.engine.trace_run import SUFFIX


def test_no_stored_trace_or_profile_matches_the_artifacts_glob() -> None:
    for fmt, suffix in SUFFIX.items():
        for purpose in ("trace", "profile"):
            name = f"bench_topic.20261203T200000000000Z.{purpose}.{suffix}"
            assert not fnmatch(name, "bench_*.json"), (fmt, name)
