"""compare's rule over many rows: runs are processes, Welch's t on the logs with its interval,
Benjamini-Hochberg over the rows of one compare, SAME only inside the equivalence margin, the
geometric-mean summary, and the options that set them."""

from __future__ import annotations

import json
import math

import pytest
from compare_artifacts import artifact

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import decide, exit_code
from pytest_gpuverify.compare.core import Pair, Rule, call, call_all, pairs_of, summaries
from pytest_gpuverify.records.artifact import PerfRow

BASE = [100.0, 101.0, 99.0, 100.5, 99.5]  # CV 0.8%


def pair(base, head, metric="us", direction="lower", **kw) -> Pair:
    runs = dict(base_runs=list(range(1, len(base) + 1)), head_runs=list(range(1, len(head) + 1)))
    return Pair(
        kw.pop("table", None),
        kw.pop("shape", "s"),
        "n",
        None,
        metric,
        direction,
        list(base),
        list(head),
        **{**runs, **kw},
    )


# -- runs are processes ---------------------------------------------------------------------------


def test_rounds_printed_in_one_process_are_one_run():
    """A harness timing a shape 5 times in one process (rows without run numbers): n = 1 a side, never
    a call, however far apart its rounds are (an A/A of one commit, one process a side, was REGRESSED)."""
    base = artifact([10.0, 10.1, 9.9, 10.0, 10.05])
    head = artifact([10.7, 10.8, 10.6, 10.7, 10.75])  # 7% apart, rounds separated
    for art in (base, head):
        art.perf = [r.model_copy(update={"run": None}) for r in art.perf]
    result = decide(base, head)
    (row,) = result.pairs
    assert (row.base, row.head) == ([10.0], [10.7]) and row.base_runs == [None]  # each side's median: one value
    assert row.call == "INCONCLUSIVE" and row.why.startswith("needs 4 runs per side (base 1, head 1)")
    assert exit_code(result.pairs) == 0


def test_a_runs_rows_give_their_median_and_runs_keep_their_number():
    rows = [
        PerfRow(shape="s", name="us", us_median=v, run=run) for run, v in ((1, 10.0), (1, 12.0), (2, 20.0), (3, 30.0))
    ]
    (row,) = pairs_of({"base": rows, "head": rows[:1]})
    assert (row.base, row.base_runs, row.head, row.head_runs) == ([11.0, 20.0, 30.0], [1, 2, 3], [10.0], [1])


@pytest.mark.parametrize("runs", [1, 2, 3])
def test_fewer_than_four_runs_never_call(runs):
    row = call(pair(BASE[:runs], [v * 2 for v in BASE[:runs]]))
    assert row.call == "INCONCLUSIVE" and row.why.startswith(f"needs 4 runs per side (base {runs}, head {runs})")
    assert row.q is None  # not tested: not counted in the compare's family


# -- the interval and the equivalence margin ------------------------------------------------------


def test_welch_on_logs_gives_the_ratio_its_interval_and_p():
    head = [v * 1.2 for v in reversed(BASE)]
    row = call(pair(BASE, head))
    assert row.ratio == pytest.approx(1.2) and row.ci_low < 1.2 < row.ci_high
    logs = [math.log(v) for v in BASE]
    sd = math.sqrt(sum((x - sum(logs) / 5) ** 2 for x in logs) / 4)
    half = 2.306004 * sd * math.sqrt(2 / 5)  # equal spreads: Welch's df is 8
    assert (math.log(row.ci_low), math.log(row.ci_high)) == pytest.approx(
        (math.log(1.2) - half, math.log(1.2) + half), rel=1e-5
    )
    assert row.call == "REGRESSED" and row.p < 1e-6 and row.q == row.p  # on its own: a family of one
    assert row.why.startswith("20.0% apart, past the factor 1.05; q = ")


def test_same_needs_the_whole_interval_inside_the_margin():
    tight = call(pair(BASE, [v * 1.02 for v in BASE]))
    assert (
        tight.call == "SAME" and "the 95% interval [" in tight.why and "inside the margin [0.952, 1.050]" in tight.why
    )
    wide_base, wide_head = [100.0, 96.0, 104.0, 98.0, 102.0], [103.0, 97.0, 108.0, 100.0, 102.0]  # CV 3%, 2% apart
    wide = call(pair(wide_base, wide_head))
    assert wide.call == "INCONCLUSIVE" and wide.why.startswith("cannot tell: 2.0% apart, but the 95% interval [")
    assert "leaves the margin [0.952, 1.050]" in wide.why and wide.ci_high > 1.05
    assert wide.runs_needed and wide.runs_needed > 5 and f"{wide.runs_needed} runs per side would decide" in wide.why
    more = call(pair(wide_base * (wide.runs_needed // 5 + 1), wide_head * (wide.runs_needed // 5 + 1)))
    assert more.call == "SAME"  # the same runs, as many as it said: decided


def test_a_real_change_within_the_factor_is_same_only_inside_the_margin():
    near = call(pair(BASE, [v * 1.045 for v in BASE]))  # significant, 4.5%: its interval reaches past 1.05
    assert near.call == "INCONCLUSIVE" and near.q < 0.05 and near.ci_high > 1.05
    assert near.why.startswith("cannot tell: 4.5% apart, a change (q = ") and "within the factor 1.05" in near.why
    small = call(pair(BASE, [v * 1.015 for v in BASE]))
    assert small.call == "SAME" and small.q < 0.05  # a real 1.5% change, inside the margin: the same for a gate


def test_past_the_factor_but_not_significant_cannot_tell():
    base, head = [100.0, 90.0, 110.0, 95.0, 105.0], [108.0, 97.0, 119.0, 103.0, 113.0]  # 8% apart, CV 8%
    row = call(pair(base, head))
    assert row.call == "INCONCLUSIVE" and row.p > 0.05
    assert row.why.startswith("cannot tell: 8.0% apart, past the factor 1.05 but not significant (q = ")
    assert row.runs_needed and row.runs_needed > 5


def test_improved_needs_the_ratio_beyond_the_factor_both_directions():
    faster = call(pair(BASE, [v * 0.8 for v in BASE]))
    tput = call(pair(BASE, [v * 0.8 for v in BASE], metric="TFLOPS", direction="higher"))
    assert (faster.call, tput.call) == ("IMPROVED", "REGRESSED")
    assert call(pair(BASE, [v * 1.2 for v in BASE]), Rule(factor=1.3)).call == "SAME"  # interval inside [0.769, 1.3]


def test_a_noisy_side_and_clocks_still_veto():
    noisy = call(pair([100.0, 80.0, 120.0, 100.0, 95.0], [v * 2 for v in BASE]))
    assert noisy.call == "INCONCLUSIVE" and noisy.why.startswith("noisy: the base's runs spread CV")
    vetoed = call(pair(BASE, [v * 2 for v in BASE]), clocks="the head was throttled in run 3 (GPU 0: hw_thermal)")
    assert vetoed.call == "INCONCLUSIVE" and vetoed.why == "the head was throttled in run 3 (GPU 0: hw_thermal)"
    assert vetoed.ci_low is not None  # the interval is still shown


def test_zero_or_negative_values_are_inconclusive():
    row = call(pair([0.0] * 5, BASE))
    assert row.call == "INCONCLUSIVE" and "zero or negative" in row.why


# -- many rows, one decision ----------------------------------------------------------------------


def test_the_rows_of_one_compare_are_one_family():
    """A row with p ~0.01 is REGRESSED alone; among 199 rows of no change its q is 1: not called."""
    lone = [100.0, 104.0, 96.0, 102.0, 98.0]
    shifted = [v * 1.09 for v in [103.0, 100.0, 97.0, 105.0, 95.0]]
    alone = call(pair(lone, shifted))
    assert alone.call == "REGRESSED" and 0.001 < alone.p < 0.05
    rows = [pair(BASE, list(reversed(BASE)), shape=f"s{i}") for i in range(199)] + [pair(lone, shifted, shape="s199")]
    called = call_all(rows)
    last = called[-1]
    assert last.p == pytest.approx(alone.p) and last.q == pytest.approx(min(1.0, alone.p * 200))
    assert last.call == "INCONCLUSIVE" and "not significant" in last.why
    assert {p.call for p in called[:-1]} == {"SAME"}


def test_benjamini_hochberg_keeps_the_clear_changes():
    rows = [pair(BASE, list(reversed(BASE)), shape=f"s{i}") for i in range(195)]
    rows += [pair(BASE, [v * 1.1 for v in reversed(BASE)], shape=f"slow{i}") for i in range(5)]
    called = call_all(rows)
    assert [p.call for p in called[-5:]] == ["REGRESSED"] * 5 and all(p.q > p.p for p in called[-5:])
    assert all(p.q < 0.05 for p in called[-5:])


def test_untested_rows_are_not_in_the_family():
    rows = [
        pair(BASE, [v * 1.2 for v in BASE]),
        pair(BASE[:2], BASE[:2], shape="few"),
        Pair(None, "u", "n", None, "blocks", None, [1.0] * 5, [2.0] * 5),
    ]
    called = call_all(rows)
    assert called[0].q == called[0].p and called[1].q is None and called[2].call == "NOT COMPARED"


# -- the summary ----------------------------------------------------------------------------------


def test_geomean_summary_takes_one_figure_per_row_with_an_interval():
    rows = [
        pair(BASE, [v / 1.2 for v in BASE], shape="a"),
        pair(BASE, [v / 1.1 for v in BASE], shape="b"),
        pair(BASE, [v * 1.1 for v in BASE], shape="a", metric="TFLOPS", direction="higher"),
    ]
    (whole,) = summaries(call_all(rows))
    assert whole.rows == 2 and whole.figures == ["us"]  # the time figure, not the TFLOPS of shape a
    assert whole.gain == pytest.approx(math.sqrt(1.2 * 1.1))  # head better: base / head for a time
    assert whole.ci_low < whole.gain < whole.ci_high and whole.ci_high / whole.ci_low < 1.05


def test_summary_per_table_and_without_an_interval_for_one_run():
    rows = [
        pair(BASE, [v / 1.2 for v in BASE], table="fp16"),
        pair(BASE, BASE, table="fp8", metric="TFLOPS", direction="higher"),
    ]
    whole, fp16, fp8 = summaries(call_all(rows))
    assert (whole.table, fp16.table, fp8.table) == (None, "fp16", "fp8")
    assert fp16.gain == pytest.approx(1.2) and fp8.gain == pytest.approx(1.0) and fp8.figures == ["TFLOPS"]
    single = summaries(call_all([pair([10.0], [8.0])]))[0]
    assert (
        single.gain == pytest.approx(1.25)
        and single.ci_low is None
        and single.why_no_interval == "the base has one run"
    )
    unaligned = [pair(BASE, BASE, shape="a"), pair(BASE, BASE, shape="b", base_runs=[1, 2, 3, 4, 6])]
    assert "not all measured in the same runs" in summaries(call_all(unaligned))[0].why_no_interval


# -- the outputs and options ----------------------------------------------------------------------


def test_every_output_carries_the_interval_q_and_summary():
    result = decide(artifact(BASE), artifact([v * 1.2 for v in BASE]))
    table = render.table(result)
    assert (
        "rule: Welch's t on the runs' logs, 4+ runs per side; a call needs q < 0.05 (Benjamini-Hochberg over "
        "the 1 row(s) tested) and the ratio beyond the factor 1.05; SAME needs the 95% interval inside "
        "[0.952, 1.05]; noisy above CV 10%" in table
    )
    row = result.pairs[0]
    assert f"1.200 [{row.ci_low:.3f}, {row.ci_high:.3f}]" in table and "REGRESSED" in table
    assert table.splitlines()[-1].startswith("geomean gain over 1 row(s) (us): 0.833 [")
    doc = json.loads(render.as_json(result))
    assert {"ci_low", "ci_high", "p", "q"} <= set(doc["pairs"][0]) and doc["rule"]["fdr"] == 0.05
    assert doc["summary"][0]["gain"] == pytest.approx(1 / 1.2) and doc["rule"]["tested"] == 1
    markdown = render.markdown(result)
    assert f"1.200 [{row.ci_low:.3f}, {row.ci_high:.3f}]" in markdown and "- geomean gain over 1 row(s)" in markdown


@pytest.mark.parametrize(
    "option, value", [("--fdr", "0"), ("--fdr", "1"), ("--fdr", "nan"), ("--confidence", "1.5"), ("--confidence", "0")]
)
def test_fdr_and_confidence_must_lie_between_0_and_1(capsys, option, value):
    assert main(["compare", option, value, "x.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"gpuverify compare: {option} ") and "must be a number above 0 and below 1" in err
    assert "\n" not in err


def test_rule_options_reach_the_rule():
    at95, at999 = (
        call(pair(BASE, [v * 1.03 for v in BASE])),
        call(pair(BASE, [v * 1.03 for v in BASE]), Rule(confidence=0.999)),
    )
    assert at999.ci_low < at95.ci_low and at999.ci_high > at95.ci_high and "the 99.9% interval [" in at999.why
    strict = call_all([pair(BASE, [v * 1.2 for v in BASE])], Rule(fdr=1e-12))
    assert strict[0].call == "INCONCLUSIVE" and "needs < 1e-12" in strict[0].why
