"""The aiter Triton pytest parser and the bench-harness parser.

perf_report fixtures are in both forms Triton printed: the full ``df.to_string()`` and the old
``print(df)`` cut with ``..`` rows and a ``[N rows x M columns]`` footer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import BENCH, TRITON_PYTEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput


def write(tmp_path: Path, text: str, name: str = "out.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def bench(tmp_path: Path, text: str) -> ParsedOutput:
    result = parse_output(BENCH, write(tmp_path, text))
    assert not [p for p in result.problems if "parser error" in p], result.problems
    assert result.parser == "bench"
    return result


def rows(result: ParsedOutput) -> list[tuple]:
    return [(r.shape, r.name, r.us_median, r.metrics, r.side) for r in result.perf]


# ----- Triton pytest ---------------------------------------------------------------------------

TRITON_FAIL = """\
op_tests/triton_tests/test_gemm_a8w8.py .F                               [100%]
=================================== FAILURES ===================================
___________________________ test_gemm[1-1280-8192] ____________________________
    def test_gemm(m, n, k):
>       torch.testing.assert_close(triton_out, torch_out, atol=0.01, rtol=1e-2)
E       AssertionError: Tensor-likes are not close!
E       
E       Mismatched elements: 2069 / 524288 (0.4%)
E       Greatest absolute difference: 54.87181854248047 at index (399, 467) (up to 0.01 allowed)
E       Greatest relative difference: 40.02494812011719 at index (143, 159) (up to 0.01 allowed)

op_tests/triton_tests/test_gemm_a8w8.py:61: AssertionError
=========================== short test summary info ============================
PASSED op_tests/triton_tests/test_gemm_a8w8.py::test_gemm[1-1280-1024]
FAILED op_tests/triton_tests/test_gemm_a8w8.py::test_gemm[1-1280-8192] - AssertionError: Tensor-likes are not close!
========================= 1 failed, 1 passed in 4.40s ==========================
"""


def test_triton_assert_close_failure(tmp_path: Path) -> None:
    result = parse_output(TRITON_PYTEST, write(tmp_path, TRITON_FAIL))
    assert result.parser == "triton"
    c = result.correctness
    assert c.passed is False and c.shapes_checked == 2 and c.max_abs_error == 54.87181854248047
    assert result.failures == [
        "op_tests/triton_tests/test_gemm_a8w8.py::test_gemm[1-1280-8192] failed: AssertionError: Tensor-likes are "
        "not close!; Mismatched elements: 2069 / 524288 (0.4%); Greatest absolute difference: 54.87181854248047 at "
        "index (399, 467) (up to 0.01 allowed)"
    ]


def test_triton_cosine_similarity_and_junit(tmp_path: Path) -> None:
    xml = write(
        tmp_path,
        (
            '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2">'
            '<testcase classname="op_tests.triton_tests.attention.test_fav3_sage" name="test_sage[1]"/>'
            '<testcase classname="op_tests.triton_tests.attention.test_fav3_sage" name="test_sage[2]"/>'
            "</testsuite></testsuites>"
        ),
        "junit.xml",
    )
    text = "Cosine Similarity: 0.998741\nCosine Similarity: 0.999912\n2 passed in 12.50s\n"
    result = parse_output(TRITON_PYTEST, write(tmp_path, text), ParseContext(junit_xml=xml))
    assert result.correctness.passed is True and result.correctness.shapes_checked == 2
    assert result.correctness.cosine_sim == 0.998741


def test_triton_all_skipped_is_inconclusive(tmp_path: Path) -> None:
    result = parse_output(TRITON_PYTEST, write(tmp_path, "sss\n3 skipped in 0.40s\n"))
    assert result.correctness.passed is None
    assert result.problems == ["the inner pytest ran no test (3 skipped)"]


# ----- perf_report ---------------------------------------------------------------------------

PERF_REPORT_FULL = """\
bench_gemm_a8w8:
         M       N       K  Triton (A)  Triton (B)
0      1.0  1280.0  8192.0   12.345678   11.000001
1     32.0  1280.0  8192.0   14.500000   13.250000
2  16384.0  1280.0  8192.0  980.903823         NaN
"""


def test_perf_report_full_form_x_columns_and_sides_from_names(tmp_path: Path) -> None:
    result = bench(tmp_path, PERF_REPORT_FULL)
    assert rows(result) == [
        ("M=1.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (A)": 12.345678}, "A"),
        ("M=1.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (B)": 11.000001}, "B"),
        ("M=32.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (A)": 14.5}, "A"),
        ("M=32.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (B)": 13.25}, "B"),
        ("M=16384.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (A)": 980.903823}, "A"),
        ("M=16384.0, N=1280.0, K=8192.0", "Triton", None, {"Triton (B)": None}, "B"),
    ]
    assert result.failures == ["line 5: nan in column 'Triton (B)' (M=16384.0, N=1280.0, K=8192.0)"]
    assert result.correctness.nan_count == 1 and result.correctness.passed is False
    assert [r.source_line for r in result.perf] == [3, 3, 4, 4, 5, 5]


def test_perf_report_time_ms_becomes_us_and_throughput_goes_to_metrics(tmp_path: Path) -> None:
    text = """\
bench_gemm_afp4wfp4:
        M       N       K  Time_(ms)
0     1.0  4096.0  4096.0   0.012345
1  1024.0  4096.0  4096.0   0.250000

bench_rmsnorm:
        M       N      TFLOPS  Bandwidth_(GB/s)
0     1.0  8192.0    0.123400       1234.500000
"""
    result = bench(tmp_path, text)
    assert rows(result) == [
        ("M=1.0, N=4096.0, K=4096.0", "Time_(us)", 12.345, {}, None),
        ("M=1024.0, N=4096.0, K=4096.0", "Time_(us)", 250.0, {}, None),
        ("M=1.0, N=8192.0", "TFLOPS", None, {"TFLOPS": 0.1234}, None),
        ("M=1.0, N=8192.0", "Bandwidth_(GB/s)", None, {"Bandwidth_(GB/s)": 1234.5}, None),
    ]
    assert result.correctness.passed is None  # a perf table checks nothing


PERF_REPORT_TRUNCATED = """\
softmax-performance:
          N      Triton  Torch (native)  Torch (jit)
0     256.0  546.133347      546.133347   199.804881
1     384.0  558.545450      558.545450   193.511801
..      ...         ...             ...          ...
96  12544.0  675.771063      351.188110   223.660666
97  12672.0  675.839968      351.085730   223.664650

[98 rows x 4 columns]
"""


def test_perf_report_truncated_print_df_form(tmp_path: Path) -> None:
    result = bench(tmp_path, PERF_REPORT_TRUNCATED)
    assert len(result.perf) == 4 * 3
    assert rows(result)[:3] == [
        ("N=256.0", "Triton", None, {"Triton": 546.133347}, None),
        ("N=256.0", "Torch (native)", None, {"Torch (native)": 546.133347}, None),
        ("N=256.0", "Torch (jit)", None, {"Torch (jit)": 199.804881}, None),
    ]
    assert result.problems == [
        "line 5: perf_report table 'softmax-performance' is cut short by pandas (print(df)); only the printed rows are read"
    ]


def test_footer_alone_is_a_problem_too(tmp_path: Path) -> None:
    text = PERF_REPORT_TRUNCATED.replace("..      ...         ...             ...          ...\n", "")
    result = bench(tmp_path, text)
    assert result.problems == [
        "line 8: perf_report table 'softmax-performance' is cut short by pandas (print(df)), 4 of 98 rows printed; "
        "only the printed rows are read"
    ]


def test_a_title_followed_by_prose_is_not_a_table(tmp_path: Path) -> None:
    result = bench(tmp_path, "Results:\nall good here\n0 1 2\nNote:\n    see the docs\n")
    assert result.perf == [] and result.problems == []


# ----- whitespace perf tables, A/B sides -----------------------------------------------------


def test_side_column(tmp_path: Path) -> None:
    text = """\
  side       shape    kernel (us)   TFLOPS
  base   4096x4096          41.20    667.1
  head   4096x4096          39.90    688.8
"""
    result = bench(tmp_path, text)
    assert rows(result) == [
        ("shape=4096x4096", "kernel (us)", 41.2, {"TFLOPS": 667.1}, "base"),
        ("shape=4096x4096", "kernel (us)", 39.9, {"TFLOPS": 688.8}, "head"),
    ]


@pytest.mark.parametrize(
    "prefix, side", [("A: ", "A"), ("B: ", "B"), ("[A] ", "A"), ("[B] ", "B"), ("[head] ", "head")]
)
def test_side_line_prefix_on_aiter_lines(tmp_path: Path, prefix: str, side: str) -> None:
    line = (
        f"{prefix}[aiter] [perf] dim: (4, 32, 8192)        dtype: torch.float16, torch avg: 16.19    us, "
        "B avg: 6.30     us, uplift: 156.9%[checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    result = bench(tmp_path, line)
    assert [(r.name, r.metrics["mean_us"], r.side) for r in result.perf] == [("torch", 16.19, side), ("B", 6.30, side)]
    assert result.correctness.passed is True and result.correctness.shapes_checked == 1


def test_side_column_in_an_aiter_markdown_table(tmp_path: Path) -> None:
    text = """\
[aiter] gemm summary (markdown):
| side   |    m |   ck us |   ck err |
|:-------|-----:|--------:|---------:|
| A      |   16 | 3.22013 |        0 |
| B      |   16 | 3.10001 |        0 |
"""
    result = bench(tmp_path, text)
    assert rows(result) == [("m=16", "ck us", 3.22013, {}, "A"), ("m=16", "ck us", 3.10001, {}, "B")]
    assert result.correctness.passed is True


def test_checkallclose_lines_in_a_harness(tmp_path: Path) -> None:
    text = (
        "warming up...\n"
        "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]\n"
        "[aiter] asm: [checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]\n"
        "    a    : torch.Size([16, 1536])\n"
        "           tensor([nan, 1.0])\n"
    )
    result = bench(tmp_path, text)
    assert result.correctness.passed is False
    assert result.failures == ["line 3: checkAllclose failed! (atol=0.01 rtol=0.01) asm:"]


def test_flydsl_ci_compare_block_has_sides(tmp_path: Path) -> None:
    text = (
        "=== Benchmark: current vs main ===\n"
        "  softmax 32768x8192 bf16  main=  4.105 TB/s  current=  3.938 TB/s  ratio= 0.959x  delta= -0.167 ( -4.1%)\n"
        "  rmsnorm 8192x8192 bf16  main=  41.5 us  current=  40.1 us  ratio= 0.966x  delta= -1.4 ( -3.4%)\n"
    )
    result = bench(tmp_path, text)
    assert rows(result) == [
        ("op=softmax, shape=32768x8192, dtype=bf16", "TB/s", None, {"TB/s": 4.105}, "main"),
        ("op=softmax, shape=32768x8192, dtype=bf16", "TB/s", None, {"TB/s": 3.938}, "current"),
        ("op=rmsnorm, shape=8192x8192, dtype=bf16", "us", 41.5, {}, "main"),
        ("op=rmsnorm, shape=8192x8192, dtype=bf16", "us", 40.1, {}, "current"),
    ]


def test_untitled_table_ratios_and_skips(tmp_path: Path) -> None:
    text = """\
     T    Path    CK (us)  FlyDSL (us)    vs CK
     1   graph       13.5          9.7   +28.5%
     2   graph       skip          9.8        -
"""
    result = bench(tmp_path, text)
    assert rows(result) == [
        ("T=1, Path=graph", "CK (us)", 13.5, {"vs CK": 28.5}, None),
        ("T=1, Path=graph", "FlyDSL (us)", 9.7, {"vs CK": 28.5}, None),
        ("T=2, Path=graph", "FlyDSL (us)", 9.8, {}, None),
    ]


def test_nothing_readable_has_no_verdict(tmp_path: Path) -> None:
    result = bench(tmp_path, "starting\nrunning 100 iterations\ndone in 3.2 s\n")
    assert result.correctness.passed is None and result.perf == [] and result.failures == []


def test_side_prefix_after_a_ci_timestamp(tmp_path: Path) -> None:
    line = (
        "2026-06-09T09:00:00.0Z [B] [aiter] [perf] dim: (4, 32)  dtype: torch.float16, torch avg: 16.19 us, "
        "B avg: 6.30 us, uplift: 156.9%[checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    result = bench(tmp_path, line)
    assert [(r.name, r.metrics["mean_us"], r.side) for r in result.perf] == [("torch", 16.19, "B"), ("B", 6.30, "B")]
