"""``gpuverify report``: one self-contained page; A/B sides per shape, each run's points, the spread."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_gpuverify.engine.artifact import Artifact, PerfRow
from pytest_gpuverify.reporting.html_report import render


def art(topic, verdict, perf=()):
    return Artifact(topic=topic, ts="2026-12-01T10:00:00Z", verdict=verdict, host="mi300", perf=list(perf),
                    reasons=["SNR 3 dB < 20"] if verdict == "FAIL" else [])


def test_page_has_a_verdict_table_failures_first_and_no_network():
    found = [(Path(f"/t/bench_t{i}.json"), art(f"t{i}", "PASS")) for i in range(200)]
    found.insert(0, (Path("/t/bench_bad.json"), art("bad", "FAIL")))
    page = render(found, [])
    assert page.count("<details") == 201 and page.count("<details id=\"t0\" open") == 1
    table = page[:page.index("<h2>Targets")]
    assert table.count("<tr") == 202 and table.index("bad") < table.index("t0<")
    assert not re.search(r"(src|href)=\"https?:", page) and "<script" not in page


def test_ab_plot_shows_both_sides_each_run_and_the_spread():
    rows = [PerfRow(shape=f"m={m}", name="gemm", side=side, us_median=10 + m + run, min_us=9 + m, max_us=14 + m)
            for m in (1, 32) for side in ("A", "B") for run in range(3)]
    page = render([(Path("/t/bench_ab.json"), art("ab", "PASS", rows))], [])
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<circle") == 12, "each run's point, both sides, both shapes"
    assert "&#9679; A" in svg and "&#9679; B" in svg
    assert svg.count('opacity="0.5"') == 4, "one spread line per side and shape"
