"""A compare of 200 rows with 60 regressions and 20 improvements, as ``compare --json`` writes it: the input
of ``gpuverify pr-comment``'s tests (its markdown, and that markdown rendered in a browser)."""

from __future__ import annotations

import json
from pathlib import Path

from compare_artifacts import artifact

from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import decide
from pytest_gpuverify.compare.core import IMPROVED, REGRESSED
from pytest_gpuverify.records.artifact import PerfRow, RepoRecord

SHAPES, SLOWER, FASTER, RUNS = 200, 60, 20, 5
BASE_SHA, HEAD_SHA = "a" * 40, "b" * 40


def _side(factor_of, sha: str):
    rows = [
        PerfRow(
            shape=f"M={s}", name="us", us_median=100.0 * factor_of(s) * (1 + 0.004 * ((s + 3 * r) % 5 - 2)), run=r + 1
        )
        for s in range(SHAPES)
        for r in range(RUNS)
    ]
    return artifact([1.0], perf=rows, repos=[RepoRecord(path="/home/dev/aiter", sha=sha)])


def _factor(shape: int) -> float:
    return 1.3 if shape < SLOWER else 0.75 if shape < SLOWER + FASTER else 1.0


def two_hundred_rows(path: Path) -> Path:
    """compare's --json of 200 rows: 60 REGRESSED, 20 IMPROVED; the first 5 regressions confirmed by an
    A/B, the next 5 not, as compare --confirm marks them."""
    result = decide(_side(lambda s: 1.0, BASE_SHA), _side(_factor, HEAD_SHA))
    result.artifacts = {"base": "tickets/main/bench_gemm.json", "head": "tickets/pr-7/bench_gemm.json"}
    doc = json.loads(render.as_json(result))
    calls = [p["call"] for p in doc["pairs"]]
    assert len(calls) == SHAPES and calls.count(REGRESSED) == SLOWER and calls.count(IMPROVED) == FASTER
    regressed = [p for p in doc["pairs"] if p["call"] == REGRESSED]
    for p in regressed[:5]:
        p["confirmed"] = True
    for p in regressed[5:10]:
        p["confirmed"] = False
    path.write_text(json.dumps(doc))
    return path
