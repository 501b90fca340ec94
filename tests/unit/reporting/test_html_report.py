"""``gpuverify report``: one self-contained page; A/B sides per shape, each run's points, the spread."""

from __future__ import annotations

import json
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
    assert not re.search(r"(src|href)=\"https?:", page) and " src=" not in page


def test_ab_plot_shows_both_sides_each_run_and_the_spread():
    rows = [
        PerfRow(shape=f"m={m}", name="gemm", side=side, us_median=10 + m + run, min_us=9 + m, max_us=14 + m)
        for m in (1, 32)
        for side in ("A", "B")
        for run in range(3)
    ]
    page = render([(Path("/t/bench_ab.json"), art("ab", "PASS", rows))], [])
    svg = page[page.index("<svg") : page.index("</svg>")]
    dots = sum(d.count("M") for d in re.findall(r'<path class="runs" d="([^"]+)"', svg))
    assert dots == 12, "each run's point, both sides, both shapes"
    assert ">base</text>" in svg and ">head</text>" in svg, "the sides by what they are, never a bare A or B"
    assert ">A</text>" not in svg and ">B</text>" not in svg
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


def test_ab_of_120_shapes_draws_every_row_names_its_sides_and_opens_on_its_summary():
    from tests.support.report_cases import AB_RUNS, AB_SHAPES, SLOWER, ab_page

    page = ab_page()
    svg = page[page.index("<svg") : page.index("</svg>")]
    dots = sum(d.count("M") for d in re.findall(r'<path class="runs" d="([^"]+)"', svg))
    assert dots == AB_SHAPES * 2 * AB_RUNS, "every run of both sides: none left out"
    assert "us (log scale)" in svg and ">base main</text>" in svg and ">head 1a2b3c4d5e</text>" in svg
    assert not re.search(r">(A|B)( [^<]*)?</text>", svg), "no series named by a bare side letter"
    assert page.index('id="summary"') < page.index("<table"), "the summary comes first"
    summary = page[page.index('id="summary"') : page.index("</section>")]
    assert re.search(r"geomean gain over 120 row\(s\) \(us\): 0\.9\d\d \[0\.9\d\d, 0\.9\d\d\] \(95%\)", summary)
    links = re.findall(r'<a href="#(t0-p\d+)">REGRESSED', summary)
    assert len(links) == len(SLOWER), links
    for link in links:
        row = page[page.index(f'<tr id="{link}">') :]
        assert row.startswith(f'<tr id="{link}"><td class="REGRESSED">REGRESSED</td>')
    calls = re.findall(r'<tr id="t0-p\d+"><td class="(\w+)">', page)
    assert calls[: len(SLOWER)] == ["REGRESSED"] * len(SLOWER) and len(calls) == AB_SHAPES, "regressions first"
    data = re.search(r'<script type="application/json" id="t0-rows-data">(.*?)</script>', page).group(1)
    assert len(json.loads(data)) == 2400, "every perf row in the table's data, none cut"


def test_a_ratio_is_shown_in_the_table_never_plotted_as_a_measurement():
    from tests.support.report_cases import one_target_page

    page = one_target_page()
    units = re.findall(r"<h5>([^<]+)</h5><svg", page)
    assert units == ["us", "TFLOPS"], units
    assert "Not plotted (ratios, not measurements; in the table): uplift_pct" in page
    assert "<th>uplift_pct</th>" in page


def test_a_flat_history_row_never_repeats_a_tick_label_and_its_title_is_clear_of_them():
    from tests.support.report_cases import history_page

    page = history_page(runs=300)
    flat = page[page.index("<h5>M=1 N=1280 K=8192 gemm us</h5>") :]
    svg = flat[: flat.index("</svg>")]
    ticks = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">([\d.]+)</text>', svg)
    labels = [t for _, t in ticks]
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
    title_x = float(re.search(r'<text x="([\d.]+)" y="[\d.]+" transform="rotate\(-90', svg).group(1))
    from pytest_gpuverify.reporting.axis import text_width

    assert all(title_x + 8 < float(x) - text_width(t) for x, t in ticks), "the y title sits left of every tick label"


def test_a_long_history_says_how_many_of_its_commits_are_drawn():
    from tests.support.report_cases import history_page

    page = history_page(runs=300)
    assert page.count("The newest 100 of 300 commits are drawn") == 2, "each row's plot says what it leaves out"
    assert history_page(runs=60).count("commits are drawn") == 0


def test_a_one_letter_printed_name_is_never_drawn_as_a_bare_side_letter():
    """aiter's legacy line prints ``torch avg: ... B avg: ...``: its "B" is the kernel's name, not a side."""
    rows = [
        PerfRow(shape="dim=(4, 32, 8192)", name=name, stat="mean", metrics={"mean_us": us, "uplift_pct": 157.0})
        for name, us in (("torch", 16.19), ("B", 6.3))
    ]
    page = render([(Path("/t/bench_rms.json"), art("rms", "PASS", rows))], [])
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert ">&quot;B&quot; (as printed)</text>" in svg and ">B</text>" not in svg
    assert "uplift" not in svg, "a ratio is not plotted"


def test_a_large_perf_table_is_data_that_markup_cannot_leave():
    bad = "</script><img src=x onerror=alert(1)><!--"
    rows = [PerfRow(shape=f"{bad} m={k}", name="gemm", us_median=10.0 + k) for k in range(400)]
    page = render([(Path("/t/bench_big.json"), art("big", "PASS", rows))], [])
    data = page[page.index('id="t0-rows-data">') :]
    data = data[len('id="t0-rows-data">') : data.index("</script>")]
    assert "<" not in data and len(json.loads(data)) == 400, "past 300 rows the table is built from inert data"
    assert "<img" not in page and page.count("&lt;/script&gt;&lt;img") >= 1, "labels elsewhere stay escaped"
