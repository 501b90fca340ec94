"""Tables are tables, and figures with their units are perf rows (parsers/recognizers/tables.py,
parsers/recognizers/perf_lines.py): every printed figure lands in a perf row with its table, shape
and unit, or is said; nothing is dropped silently. Read with the prefilter on (each engine) and off."""

from __future__ import annotations

import pytest
from parse_cases import read_agreeing, verdict_of

from pytest_gpuverify.config.targets import BENCH
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

pytestmark = pytest.mark.usefixtures("engine")


def read(text: str, kind: str = BENCH) -> ParsedOutput:
    return read_agreeing(text, kind, chunk=97, noise=None)


def verdict(parsed: ParsedOutput) -> str:
    return verdict_of(parsed)[0]


FLAGGEMS = """\
Operator: mm  Performance Test (dtype=torch.float16, mode=kernel,level=comprehensive)
Status       Torch Latency (ms)    Gems Latency (ms)         Gems Speedup               TFLOPS          Size Detail
---------------------------------------------------------------------------------------------------------------------
SUCCESS               0.010240            0.009216               1.111               0.045          [torch.Size([384, 384]), torch.Size([384, 384])]
FAILED                0.020480                 nan               0.000               0.000          [torch.Size([1024, 1024]), torch.Size([1024, 1024])]
"""  # noqa: E501 (FlagGems prints rows this wide)


def test_a_flaggems_table_gives_every_figure_in_its_unit_and_a_failed_status_fails() -> None:
    parsed = read(FLAGGEMS)
    rows = [(r.name, r.us_median, r.metrics) for r in parsed.perf if r.source_line == 4]
    assert rows == [
        ("Torch Latency (us)", 10.24, {"Gems Speedup": 1.111}),
        ("Gems Latency (us)", 9.216, {"Gems Speedup": 1.111}),
        ("TFLOPS", None, {"TFLOPS": 0.045, "Gems Speedup": 1.111}),
    ]
    assert {r.table for r in parsed.perf} == {
        "Operator: mm  Performance Test (dtype=torch.float16, mode=kernel,level=comprehensive)"
    }
    assert all(r.shape.startswith("Size Detail=[torch.Size(") for r in parsed.perf)
    assert verdict(parsed) == "FAIL"  # the FAILED status, and the nan where a latency was due
    assert any("column 'Status' says FAILED" in f for f in parsed.failures), parsed.failures
    assert any("nan in column 'Gems Latency (ms)'" in f for f in parsed.failures), parsed.failures
    assert [r.us_median for r in parsed.perf if r.name == "Gems Latency (us)"] == [9.216, None]  # kept, null


def test_a_status_of_success_is_no_check() -> None:
    parsed = read(FLAGGEMS.split("FAILED")[0])
    assert verdict(parsed) == "INCONCLUSIVE" and len(parsed.perf) == 3


def test_a_gemm_bench_table_with_a_unit_in_parentheses() -> None:
    text = """\
  M       N       K    time(ms)     TFLOPS
 256     256     256    0.0123       2.73
1024    1024    1024    0.2500      8.590
"""
    parsed = read(text)
    assert [(r.shape, r.name, r.us_median, r.metrics) for r in parsed.perf] == [
        ("M=256, N=256, K=256", "time(us)", 12.3, {"TFLOPS": 2.73}),
        ("M=1024, N=1024, K=1024", "time(us)", 250.0, {"TFLOPS": 8.59}),
    ]


def test_a_hipblaslt_csv_row_under_its_header() -> None:
    text = (
        "[0]:transA,transB,batch_count,m,n,k,a_type,d_type,compute_type,hipblaslt-Gflops,hipblaslt-GB/s,us,"
        "CPU-Gflops,CPU-us,norm_error,atol,rtol\n"
        "    N,N,1,128,128,128,f16_r,f16_r,f32_r,403.298,17.6063,10.4,0.0960059,43688,2.44879e-07,1e-05,1e-05\n"
    )
    parsed = read(text)
    us = [r for r in parsed.perf if r.name == "us"]
    assert len(us) == 1 and us[0].us_median == 10.4
    assert us[0].metrics == {"hipblaslt-Gflops": 403.298, "hipblaslt-GB/s": 17.6063}
    assert "d_type=f16_r" in us[0].shape
    assert verdict(parsed) == "PASS"  # norm_error under its row's atol is a check
    assert verdict(read(text.replace("2.44879e-07", "0.25"))) == "FAIL"


def test_a_ck_perf_line_and_the_largest_max_err() -> None:
    text = (
        "Perf: 1.23 ms, 110.5 TFlops, 300.2 GB/s, DeviceGemmXdl<256, 128, 4>\n"
        "max err: 16, number of errors: 29, 2.832031% wrong values\nmax err: 191\n"
    )
    parsed = read(text)
    [row] = parsed.perf
    assert (row.name, row.us_median, row.metrics, row.shape) == (
        "Perf",
        1230.0,
        {"TFlops": 110.5, "GB/s": 300.2},
        "DeviceGemmXdl<256, 128, 4>",
    )
    assert parsed.correctness.max_abs_error == 191.0 and verdict(parsed) == "FAIL"  # "29 ... wrong values"


def test_a_header_on_two_bar_rows() -> None:
    text = """\
| op   | shape     | FlyDSL | AIter  | speedup |
|      |           | (us)   | (us)   |         |
|------|-----------|--------|--------|---------|
| gemm | 4096x4096 | 41.2   | 45.0   | 1.09x   |
"""
    parsed = read(text)
    assert [(r.name, r.us_median, r.metrics) for r in parsed.perf] == [
        ("FlyDSL (us)", 41.2, {"speedup": 1.09}),
        ("AIter (us)", 45.0, {"speedup": 1.09}),
    ]
    assert not parsed.problems


def test_a_row_that_does_not_fit_a_two_row_header_picks_the_row_that_fits() -> None:
    text = """\
| op | shape | dtype | FlyDSL | AIter | speedup | note |
| op | shape | dtype | FlyDSL us | AIter us | speedup | note | run |
|----|-------|-------|--------|-------|---------|------|-----|
| gemm | 4096 | bf16 | 41.2 | 45.0 | 1.09x | - | 1 |
"""
    parsed = read(text)
    assert [r.name for r in parsed.perf] == ["FlyDSL us", "AIter us"] and not parsed.problems


def test_rccl_tests_table_units_line_and_groups() -> None:
    text = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    105.5    9.94   14.91      0    104.8   10.01   15.01      0
     2097152        524288     float     sum      -1    190.3   11.02   16.53      3    189.9   11.04   16.57      0
"""
    parsed = read(text)
    times = [(r.name, r.us_median) for r in parsed.perf if r.us_median is not None]
    assert times == [
        ("out-of-place time (us)", 105.5),
        ("in-place time (us)", 104.8),
        ("out-of-place time (us)", 190.3),
        ("in-place time (us)", 189.9),
    ]
    assert verdict(parsed) == "FAIL"  # 3 wrong values out of place in the second row
    assert parsed.correctness.checks_failed == 1 and parsed.correctness.checks_passed == 3


@pytest.mark.parametrize(
    "line, note_or_failure",
    [
        ("Kernel avg time: -0.5 ms", "negative time"),
        ("Perf: -1.2 ms, 3.0 TFlops", "negative time"),
        ("gemm latency: nan us", "nan in 'gemm latency' time"),
        ("Throughput: nan requests/s, 4567.89 total tokens/s", "nan in 'req/s'"),
        ("median throughput:   nan token/s", "nan in 'median tok/s'"),
    ],
)
def test_a_figure_that_cannot_be_one_keeps_its_row_and_is_said(line: str, note_or_failure: str) -> None:
    parsed = read(line + "\n")
    assert parsed.perf, "the row is kept"
    said = parsed.notes + parsed.failures
    assert any(note_or_failure in s for s in said), said
    if "nan" in line:
        assert verdict(parsed) == "FAIL"  # NaN where a number was due
    else:
        assert parsed.perf[0].us_median is None and parsed.perf[0].min_us is None


def test_a_labelled_figure_names_the_unit_it_is_kept_in() -> None:
    parsed = read("Mean TTFT (ms):                          26.56\nBenchmark duration (s):                  339.37\n")
    assert [(r.name, r.stat, r.us_median) for r in parsed.perf] == [
        ("Mean TTFT (us)", "mean", None),
        ("Benchmark duration (us)", None, 339370000.0),
    ]
    assert parsed.perf[0].metrics == {"mean_us": 26560.0}


def test_a_build_or_a_download_time_is_no_perf_row() -> None:
    parsed = read("[aiter] finish build [module_gemm], cost 39.6s\nDownloaded weights in 12.5 s\n")
    assert parsed.perf == []


def test_an_fp8_output_named_in_a_dst_dtype_column_needs_an_snr() -> None:
    text = """\
✅ torch.float8_e4m3fn implementations match
per-token-group-quant-8bit-performance:
    batch_size  seq_len            dst_dtype       Triton   SGL Kernel
0            1       64  torch.float8_e4m3fn    10.656000     9.344000
"""
    parsed = read(text)
    assert parsed.correctness.dtype == "torch.float8_e4m3fn"
    reasons = verdict_and_reasons(RunRecord(ran=True, exit_code=0), parsed, None, TargetRecord(name="t", kind=BENCH))[1]
    assert any("output without an SNR" in r for r in reasons), reasons


# A perf_report run for two settings under one plot name: two tables of one title, rows of one key.
PERF_REPORT_TWICE = """\
attention-fwd:
     N_CTX     Triton
0   1024.0  65.914595
1   2048.0  77.955253
attention-fwd:
     N_CTX     Triton
0   1024.0  82.528012
1   2048.0  90.000000
"""


def test_a_title_printed_again_is_told_apart_by_its_ordinal() -> None:
    parsed = read(PERF_REPORT_TWICE)
    named = [(r.table, r.shape, r.metrics["Triton"]) for r in parsed.perf]
    assert named == [
        ("attention-fwd", "N_CTX=1024.0", 65.914595),
        ("attention-fwd", "N_CTX=2048.0", 77.955253),
        ("attention-fwd #2", "N_CTX=1024.0", 82.528012),
        ("attention-fwd #2", "N_CTX=2048.0", 90.0),
    ]


@pytest.mark.parametrize("above", ["causal={}", "[causal={}]", "### causal={}, d=64 ###", "config: causal={}"])
def test_a_title_printed_again_is_named_by_the_settings_printed_above_it(above: str) -> None:
    first, second = PERF_REPORT_TWICE.split("attention-fwd:\n")[1:]
    text = (
        f"{above.format(False)}\nattention-fwd:\n{first}"
        f"some other line\n{above.format(True)}\n\nattention-fwd:\n{second}"
    )
    settings = above.format(True).strip("[]# ").removeprefix("config: ")
    assert [r.table for r in read(text).perf] == ["attention-fwd"] * 2 + [f"attention-fwd [{settings}]"] * 2


def test_settings_printed_for_both_tables_alike_give_the_ordinal() -> None:
    first, second = PERF_REPORT_TWICE.split("attention-fwd:\n")[1:]
    text = f"d=64\nattention-fwd:\n{first}d=64\nattention-fwd:\n{second}"
    assert [r.table for r in read(text).perf][2:] == ["attention-fwd #2"] * 2


def test_settings_far_above_or_before_an_earlier_table_name_nothing() -> None:
    first, second = PERF_REPORT_TWICE.split("attention-fwd:\n")[1:]
    far = f"causal=True\nattention-fwd:\n{first}causal=True\none\ntwo\nthree\nattention-fwd:\n{second}"
    assert [r.table for r in read(far).perf][2:] == ["attention-fwd #2"] * 2
    # the settings line above the first table only: the second, printed after it, is not of those settings
    early = f"causal=True\nattention-fwd:\n{first}attention-fwd:\n{second}"
    assert [r.table for r in read(early).perf][2:] == ["attention-fwd #2"] * 2


def test_tables_of_one_title_with_other_keys_and_untitled_repeats() -> None:
    other = PERF_REPORT_TWICE.replace("1024.0  82.5", "4096.0  82.5").replace("2048.0  90.0", "8192.0  90.0")
    assert {r.table for r in read(other).perf} == {"attention-fwd"}  # no key repeated: one table's rows
    untitled = "| M | us |\n|---|---|\n| 16 | 3.0 |\n\n| M | us |\n|---|---|\n| 16 | 4.0 |\n"
    assert [(r.table, r.us_median) for r in read(untitled).perf] == [(None, 3.0), ("#2", 4.0)]
    configured = "mode=fwd\n" + untitled.replace("\n\n", "\nmode=bwd\n")
    assert [r.table for r in read(configured).perf] == [None, "[mode=bwd]"]
