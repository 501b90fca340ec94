"""``gpuverify report``: one self-contained page; A/B sides per shape, each run's points, the spread."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_gpuverify.records.artifact import Artifact, PerfRow
from pytest_gpuverify.reporting.html_report import render


def art(topic, verdict, perf=()):
    return Artifact(
        topic=topic,
        ts="2026-12-01T10:00:00Z",
        verdict=verdict,
        host="mi300",
        perf=list(perf),
        reasons=["SNR 3 dB < 20"] if verdict == "FAIL" else [],
    )


def test_page_has_a_verdict_table_failures_first_and_no_network():
    found = [(Path(f"/t/bench_t{i}.json"), art(f"t{i}", "PASS")) for i in range(200)]
    found.insert(0, (Path("/t/bench_bad.json"), art("bad", "FAIL")))
    page = render(found, [])
    assert page.count("<details") == 201 and page.count('<details id="t0" open') == 1
    table = page[: page.index("<h2>Targets")]
    assert table.count("<tr") == 202 and table.index("bad") < table.index("t0<")
    assert not re.search(r"(src|href)=\"https?:", page) and "<script" not in page


def test_ab_plot_shows_both_sides_each_run_and_the_spread():
    rows = [
        PerfRow(shape=f"m={m}", name="gemm", side=side, us_median=10 + m + run, min_us=9 + m, max_us=14 + m)
        for m in (1, 32)
        for side in ("A", "B")
        for run in range(3)
    ]
    page = render([(Path("/t/bench_ab.json"), art("ab", "PASS", rows))], [])
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count("<circle") == 12, "each run's point, both sides, both shapes"
    assert "&#9679; A" in svg and "&#9679; B" in svg
    assert svg.count('opacity="0.5"') == 4, "one spread line per side and shape"


def test_every_figure_is_plotted_per_unit_and_labels_are_never_cut():
    """Times and throughputs alike (Triton perf_report rows hold GB/s only), each axis naming its unit."""
    long_shape = "M=8192, N=8192, K=8192, dtype=torch.bfloat16, layout=TN, split_k=4, stages=3, warps=8, extra"
    rows = [
        PerfRow(shape="N=512", name="Triton (GB/s)", metrics={"Triton (GB/s)": 1658.7}, table="softmax-performance:"),
        PerfRow(
            shape="N=512",
            name="Torch (native) (GB/s)",
            metrics={"Torch (native) (GB/s)": 1604.9},
            table="softmax-performance:",
        ),
        PerfRow(shape=long_shape, name="us", us_median=41.2, metrics={"TFLOPS": 120.0}),
    ]
    page = render([(Path("/t/bench_tp.json"), art("tp", "PASS", rows))], [])
    svgs = re.findall(r"<h5>([^<]+)</h5><svg.*?</svg>", page)
    assert svgs == ["GB/s", "us", "TFLOPS"], svgs
    for unit in ("GB/s", "us", "TFLOPS"):
        svg = page[page.index(f"<h5>{unit}</h5>") :]
        svg = svg[: svg.index("</svg>")]
        assert f'text-anchor="middle">{unit}</text>' in svg and ">shape</text>" in svg
    assert "softmax-performance: N=512" in page and "Torch (native) (GB/s)" in page
    label = "".join(re.findall(r"<tspan[^>]*>([^<]*)</tspan>", page[page.index("<h5>us</h5>") :]))
    assert label.replace(" ", "").startswith(long_shape.replace(" ", "")[:40]) and "extra" in label


def test_targets_by_ticket_and_topic_and_no_result_drawn_apart():
    rows = [PerfRow(shape="m=1", name="gemm", us_median=10.0)]
    good = art("gemm", "PASS", rows).model_copy(update={"key": "T-1"})
    other = art("gemm", "PASS", rows).model_copy(update={"key": "T-2"})
    failed = art("bad", "FAIL", rows).model_copy(update={"key": "T-1"})
    page = render(
        [(Path("/a/bench_bad.json"), failed), (Path("/a/bench_gemm.json"), good), (Path("/b/bench_gemm.json"), other)],
        [],
    )
    assert "T-1 / gemm" in page and "T-2 / gemm" in page
    apart = page.index("<h2>Targets without a result")
    assert page.index("T-1 / bad <code>") > apart
    assert page.index("T-1 / gemm <code>") < apart and page.index("T-2 / gemm <code>") < apart
    section = page[apart:]
    assert "no result: FAIL" in section and "Perf rows: no result (the target is FAIL" in section
    assert "no result" not in page[page.index("<h2>Targets</h2>") : apart]
