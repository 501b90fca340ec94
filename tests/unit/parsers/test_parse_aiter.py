"""The aiter op_test output parser and the line reader under it.

Fixtures are written inline in the formats aiter's op_tests print (as in the real outputs under
tests/data/samples/aiter/), ANSI colour codes included.
"""

from __future__ import annotations

from pathlib import Path

from aiter_cases import GREEN_PASSED, JIT_NOISE, MARKDOWN_GEMM, RED_CATASTROPHIC, RED_FAILED, YELLOW_WARNING, check_line

from pytest_gpuverify.config.targets import AITER_OP_TEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.reading.lines import LineReader, iter_lines, strip_ansi, strip_ci_prefix
from pytest_gpuverify.parsers.reading.tables import aligned_columns, split_aligned_row
from pytest_gpuverify.parsers.result import ParsedOutput


def parse_text(tmp_path: Path, text: str | bytes, name: str = "out.txt") -> ParsedOutput:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    result = parse_output(AITER_OP_TEST, path)
    assert not [p for p in result.problems if "parser error" in p], result.problems
    return result


# ----- markdown summary tables ---------------------------------------------------------------


def test_markdown_table_gives_one_perf_row_per_provider(tmp_path: Path) -> None:
    result = parse_text(tmp_path, JIT_NOISE + MARKDOWN_GEMM + "[aiter] done\n")
    assert [(row.name, row.shape) for row in result.perf] == [
        ("ck us", "dtype=torch.bfloat16, m=16, n=1536, k=7168"),
        ("asm us", "dtype=torch.bfloat16, m=16, n=1536, k=7168"),
        ("ck us", "dtype=torch.bfloat16, m=32, n=1536, k=7168"),
        ("asm us", "dtype=torch.bfloat16, m=32, n=1536, k=7168"),
        ("ck us", "dtype=torch.bfloat16, m=64, n=1536, k=7168"),  # asm skipped for this shape: no row
    ]
    assert [row.us_median for row in result.perf] == [
        float("12.3457"),
        float("9.87654"),
        float("13.0021"),
        float("10.1234"),
        float("15.8823"),
    ]
    assert result.perf[0].metrics == {"ck TFLOPS": float("28.5301"), "ck TB/s": float("1.83621")}
    assert result.perf[1].metrics == {"asm TFLOPS": float("35.6625")}
    assert all(row.stat is None for row in result.perf)  # the table does not say which statistic
    assert result.perf[0].source_line == JIT_NOISE.count("\n") + 4  # the first data row
    assert result.correctness.passed is True
    assert result.correctness.shapes_checked == 3
    assert result.correctness.checks_failed == 0
    assert result.failures == [] and result.problems == []


def test_markdown_bare_us_column_owns_bare_tflops_and_several_tables_are_read(tmp_path: Path) -> None:
    text = (
        "[aiter] quant summary (markdown):\n"
        "| dtype          |    m |    n |      us |   TFLOPS |    TB/s |   err |\n"
        "|:---------------|-----:|-----:|--------:|---------:|--------:|------:|\n"
        "| torch.bfloat16 |    1 | 4096 | 3.22013 | 0.002604 | 0.00764 |     0 |\n"
        "E=256, k=8:\n"  # a bare table follows another line, with no summary header
        "|     m |    n | dtype    | op      |     ck_us |   triton_us |\n"
        "|------:|-----:|:---------|:--------|----------:|------------:|\n"
        "|    16 |  256 | bfloat16 | rmsnorm |   3.02416 |     2.74818 |\n"
    )
    result = parse_text(tmp_path, text)
    names = [(row.name, row.us_median, row.metrics) for row in result.perf]
    assert names == [
        ("us", 3.22013, {"TFLOPS": 0.002604, "TB/s": 0.00764}),
        ("ck_us", 3.02416, {}),
        ("triton_us", 2.74818, {}),
    ]
    assert result.perf[1].shape == "m=16, n=256, dtype=bfloat16, op=rmsnorm"
    assert result.correctness.shapes_checked == 1  # only the first table has an err column


def test_markdown_table_without_err_column_has_no_verdict(tmp_path: Path) -> None:
    text = (
        "|     m |    n | dtype    | op                   |     ck_us |    hip_us |\n"
        "|------:|-----:|:---------|:---------------------|----------:|----------:|\n"
        "|    16 |  256 | bfloat16 | rmsnorm              |   3.02416 |   2.66223 |\n"
        "|    16 |  256 | bfloat16 | rmsnorm_dynamicquant |   3.4668  |   2.89116 |\n"
    )
    result = parse_text(tmp_path, text)
    assert [row.us_median for row in result.perf] == [3.02416, 2.66223, 3.4668, 2.89116]
    assert result.correctness.passed is None
    assert result.correctness.shapes_checked == 0


def test_err_column_above_tolerance_fails(tmp_path: Path) -> None:
    text = (
        "E=256, k=8:\n"
        "| dtype          |   token |   model_dim |   E |   topk | use_g1u1   |        us |       err |\n"
        "|:---------------|--------:|------------:|----:|-------:|:-----------|----------:|----------:|\n"
        "| torch.bfloat16 |       1 |        7168 | 256 |      8 | True       |   29.0853 | 0.970006  |\n"
        "| torch.bfloat16 |       3 |        7168 | 256 |      8 | True       |   39.7758 | 0.01      |\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.passed is False
    assert result.correctness.checks_failed == 1
    assert result.correctness.checks_warning == 1  # 0 < err <= 0.05: aiter's "warning!"
    assert result.correctness.shapes_checked == 2
    assert result.failures == [
        (
            "line 4: err 0.970006 > 0.05 in column 'err' "
            "(dtype=torch.bfloat16, token=1, model_dim=7168, E=256, topk=8, use_g1u1=True)"
        )
    ]
    assert [row.us_median for row in result.perf] == [29.0853, 39.7758]  # kept, never reported as a result


def test_nan_in_time_column_fails(tmp_path: Path) -> None:
    text = (
        "[aiter] gemm summary (markdown):\n"
        "|    m |   ck us |   ck err |   asm us |\n"
        "|-----:|--------:|---------:|---------:|\n"
        "|    1 | 9.8     |        0 |      nan |\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.passed is False
    assert result.correctness.nan_count == 1
    assert result.failures == ["line 4: nan in column 'asm us' (m=1)"]
    assert [(row.name, row.us_median) for row in result.perf] == [("ck us", 9.8), ("asm us", None)]


def test_truncated_markdown_row_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    result = parse_text(tmp_path, MARKDOWN_GEMM[: MARKDOWN_GEMM.index("13.0021") + 3])
    assert [row.us_median for row in result.perf] == [12.3457, 9.87654]
    assert result.problems == ["line 5: table row has 5 cells, header has 11; row skipped"]


# ----- checkAllclose lines -------------------------------------------------------------------

FAILED_BLOCK = f"""\
{check_line("triton: dynamic quant", RED_FAILED)}
    a    : torch.Size([16, 1536])
           tensor([-1328.0000,   -59.2500,  -880.0000,   450.0000,   450.0000,  1656.0000,
          135.0000,   nan], device='cuda:0', dtype=torch.bfloat16)
    b    : torch.Size([16, 1536])
           tensor([-1200.,    43.,  -996.,   560.,   344.,  1536.,   256.,   480.],
       device='cuda:0', dtype=torch.bfloat16)
    delta:
           tensor([128., 102., 116., 110., 106., 120., 121., nan], device='cuda:0',
       dtype=torch.bfloat16)
[aiter] -->max abs delta:224.0, delta details: 2.3% (11896 of 524288) elements
"""


def test_failed_check_in_a_passing_run_fails_and_names_the_line(tmp_path: Path) -> None:
    text = JIT_NOISE + check_line("ck: ") + "\n" + FAILED_BLOCK + check_line("asm: ") + "\n"
    result = parse_text(tmp_path, text)
    failed_line = JIT_NOISE.count("\n") + 2
    assert result.correctness.passed is False
    assert result.failures == [f"line {failed_line}: checkAllclose failed! (atol=0.01 rtol=0.01) triton: dynamic quant"]
    assert (result.correctness.checks_passed, result.correctness.checks_failed) == (2, 1)
    assert [c.status for c in result.checks] == ["passed", "failed", "passed"]
    assert result.checks[1].label == "triton: dynamic quant" and result.checks[1].line == failed_line
    assert result.correctness.nan_count == 2  # the NaN the tensors under failed! printed
    assert (result.correctness.atol, result.correctness.rtol) == (0.01, 0.01)


def test_warning_only_passes(tmp_path: Path) -> None:
    text = (
        check_line("ck: ", YELLOW_WARNING) + " a and b results are not all close\n"
        "[aiter] -->max abs delta:0.0625, delta details: 0.3% (12 of 4096) elements\n"
        + check_line("asm: ", YELLOW_WARNING, atol="0.05", rtol="0.02")
        + " a and b results are not all close\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.passed is True
    assert result.correctness.checks_warning == 2 and result.correctness.checks_failed == 0
    assert (result.correctness.atol, result.correctness.rtol) == (0.05, 0.02)  # the largest seen
    assert result.correctness.shapes_checked == 2  # no calling blocks: one per check line
    assert result.failures == []


def test_nan_max_abs_delta_fails(tmp_path: Path) -> None:
    text = (
        check_line("ck: ", YELLOW_WARNING) + " a and b results are not all close\n"
        "[aiter] -->max abs delta:nan, delta details: 0.0% (1 of 4096) elements\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.passed is False
    assert result.correctness.nan_count == 1
    assert result.failures == ["line 2: max abs delta is nan"]


def test_catastrophic_and_its_assertion_fail(tmp_path: Path) -> None:
    text = (
        check_line("ck: ", RED_CATASTROPHIC) + " max abs delta inf\n"
        "    a    : torch.Size([4])\n"
        "           tensor([inf, 1., 2., 3.], device='cuda:0')\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/aiter/op_tests/test_quant.py", line 80, in <module>\n'
        "AssertionError: ck: catastrophic error: max abs delta inf, 25.0% (1 of 4) elements mismatch\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.passed is False
    assert result.correctness.checks_failed == 1
    assert result.failures[0] == "line 1: checkAllclose catastrophic! (atol=0.01 rtol=0.01) ck:"
    assert result.failures[1].startswith("line 6: AssertionError: ck: catastrophic error")
    assert result.correctness.nan_count == 1  # the inf in the tensor dump


def test_old_format_without_ansi_and_max_delta(tmp_path: Path) -> None:
    text = (
        "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 failed!]\n"
        "    a: tensor([1., 2.])\n"
        "[aiter] -->max delta:inf\n"
        "[aiter] asm: [checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    result = parse_text(tmp_path, text)
    assert [c.status for c in result.checks] == ["failed", "passed"]
    assert result.correctness.passed is False
    assert result.correctness.nan_count == 1
    assert "line 3: max abs delta is inf" in result.failures


def test_calling_blocks_count_checked_shapes(tmp_path: Path) -> None:
    def calling(m: int) -> str:
        return (
            "[aiter] \n"
            f"calling test_gemm(dtype                        = torch.bfloat16,\n"
            f"                  m                            = {m},\n"
            "                  k                            = 7168)\n"
        )

    text = (
        calling(16)
        + check_line("ck: ")
        + "\n"
        + check_line("asm: ")
        + "\n"
        + calling(32)
        + check_line("ck: ")
        + "\n"
        + calling(64)
        + "[aiter] skipped\n"
    )
    result = parse_text(tmp_path, text)
    assert result.correctness.shapes_checked == 2
    assert result.correctness.checks_passed == 3
    assert result.perf == []  # the calling block's `=` lines are not a table


# ----- legacy one-line perf ------------------------------------------------------------------


def test_legacy_perf_lines_give_torch_and_kernel_rows(tmp_path: Path) -> None:
    text = (
        JIT_NOISE
        + "[aiter] [perf] dim: (4, 32, 8192)        dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, "
        f"uplift: 156.9%[checkAllclose atol=0.01 rtol=0.01 {GREEN_PASSED}]\n"
        "[aiter] using soltype=0, solidx=0 for m=4 n=1 k=9216 dtype=torch.bfloat16 bias=False, scaleAB=False\n"
        "[aiter] [perf] dim: (4, 1, 9216)         dtype: torch.bfloat16, torch avg: 10.86    us, B avg: 10.18    us, "
        "uplift: 6.7% [checkAllclose atol=0.01 rtol=0.01 passed~]\n"
        "[aiter] a,b: [perf] dim: (4, 32, 8192)        dtype: torch.bfloat16, quantDtype: torch.float8_e4m3fnuz, "
        "torch avg: 39.61    us, skinny_gemm avg: 7.70     us, uplift: 414.2%[checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    result = parse_text(tmp_path, text)
    # aiter's ``avg`` is a mean: its time is in metrics["mean_us"], never in us_median
    rows = [(r.name, r.us_median, r.stat, r.metrics, r.shape) for r in result.perf]
    assert rows == [
        ("torch", None, "mean", {"mean_us": 16.19}, "dim=(4, 32, 8192), dtype=torch.float16"),
        ("B", None, "mean", {"mean_us": 6.30, "uplift_pct": 156.9}, "dim=(4, 32, 8192), dtype=torch.float16"),
        ("torch", None, "mean", {"mean_us": 10.86}, "dim=(4, 1, 9216), dtype=torch.bfloat16"),
        ("B", None, "mean", {"mean_us": 10.18, "uplift_pct": 6.7}, "dim=(4, 1, 9216), dtype=torch.bfloat16"),
        (
            "torch",
            None,
            "mean",
            {"mean_us": 39.61},
            "dim=(4, 32, 8192), dtype=torch.bfloat16, quantDtype=torch.float8_e4m3fnuz",
        ),
        (
            "skinny_gemm",
            None,
            "mean",
            {"mean_us": 7.70, "uplift_pct": 414.2},
            "dim=(4, 32, 8192), dtype=torch.bfloat16, quantDtype=torch.float8_e4m3fnuz",
        ),
    ]
    assert result.correctness.passed is True
    assert result.correctness.shapes_checked == 3
    assert result.checks[2].label.startswith("a,b: [perf] dim: (4, 32, 8192)")


def test_legacy_named_timing_lines(tmp_path: Path) -> None:
    text = (
        "[aiter] [perf] use_g1u1=True token=128, quant=fp8quant, model_dim=4096, E=32, dtype: torch.bfloat16, "
        "torch_avg: 22552.61 us, asm_avg: 148.84 us ...... uplift: 15052.0%[checkAllclose atol=100 rtol=0.01 passed~]\n"
        "[aiter] ck_moe_2stages:  234.56 us,   654.00 tflops......(quant:QuantType.per_1x32)"
        f"[checkAllclose atol=0.01 rtol=0.01 {GREEN_PASSED}]\n"
        "[aiter] [perf] a8w8 asm:    50.77 us ...... m=1, model_dim=2048, topk=8, dtype: torch.bfloat16"
        "[checkAllclose atol=0.05 rtol=0.05 passed~]\n"
    )
    result = parse_text(tmp_path, text)
    rows = [(r.name, r.us_median, r.stat, r.metrics, r.shape) for r in result.perf]
    shape = "use_g1u1=True, token=128, quant=fp8quant, model_dim=4096, E=32, dtype=torch.bfloat16"
    assert rows == [
        ("torch", None, "mean", {"mean_us": 22552.61}, shape),
        ("asm", None, "mean", {"mean_us": 148.84, "uplift_pct": 15052.0}, shape),
        ("ck_moe_2stages", 234.56, None, {"TFLOPS": 654.0}, "quant=QuantType.per_1x32"),
        ("a8w8 asm", 50.77, None, {}, "m=1, model_dim=2048, topk=8, dtype=torch.bfloat16"),
    ]
    assert result.correctness.atol == 100.0


def test_perf_lines_without_checks_have_no_verdict(tmp_path: Path) -> None:
    text = (
        JIT_NOISE
        + "[aiter] [perf] dim: (4, 32, 8192)        dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, "
        "uplift: 156.9%\n"
        "[aiter] avg: 6.31 us/iter from cuda.Event\n"  # an AITER_LOG_MORE extra, not a result
    )
    result = parse_text(tmp_path, text)
    assert [r.name for r in result.perf] == ["torch", "B"]
    assert result.correctness.passed is None
    assert result.correctness.shapes_checked == 0


def test_noise_only_has_no_verdict(tmp_path: Path) -> None:
    result = parse_text(tmp_path, JIT_NOISE * 3)
    assert result.correctness.passed is None
    assert result.perf == [] and result.checks == [] and result.failures == [] and result.problems == []
    assert result.lines_read == JIT_NOISE.count("\n") * 3


# ----- pandas-printed summaries ----------------------------------------------------------------

# printed by pandas 3.1 (display.max_rows=200, as aiter sets it; output piped, so 80 columns wide)
PANDAS_REPR_ELIDED = """\
[aiter] summary:
              dtype     m  ...  hipmm bpreshuffle us  hipmm bpreshuffle err
0    torch.bfloat16     1  ...              9.293663               0.000000
1    torch.bfloat16     9  ...              9.436520               0.000012
2    torch.bfloat16    17  ...              9.579377               0.000024
..              ...   ...  ...                   ...                    ...
297  torch.bfloat16  2377  ...             51.722234               0.000000
298  torch.bfloat16  2385  ...             51.865092               0.000012

[299 rows x 9 columns]
[aiter] done
"""


def test_pandas_repr_with_elided_columns_and_rows(tmp_path: Path) -> None:
    result = parse_text(tmp_path, PANDAS_REPR_ELIDED)
    assert result.problems == [
        "line 2: summary table has elided columns; rerun with COLUMNS=10000",
        "line 6: summary table has elided rows; only the printed rows are read",
    ]
    rows = [(r.name, r.shape, r.us_median) for r in result.perf]
    assert rows == [
        ("hipmm bpreshuffle us", "dtype=torch.bfloat16, m=1", float("9.293663")),
        ("hipmm bpreshuffle us", "dtype=torch.bfloat16, m=9", float("9.436520")),
        ("hipmm bpreshuffle us", "dtype=torch.bfloat16, m=17", float("9.579377")),
        ("hipmm bpreshuffle us", "dtype=torch.bfloat16, m=2377", float("51.722234")),
        ("hipmm bpreshuffle us", "dtype=torch.bfloat16, m=2385", float("51.865092")),
    ]
    assert result.correctness.shapes_checked == 5
    assert result.correctness.passed is True  # what is visible passed; the problems say it is not all
    assert (result.correctness.checks_passed, result.correctness.checks_warning) == (2, 3)


def test_pandas_repr_metrics_follow_their_provider(tmp_path: Path) -> None:
    text = (
        "[aiter] mha summary:\n"
        "   batch  seqlen  fwd_us  fwd_tflops  bwd_us  bwd_tflops  fwd_gb_per_sec\n"
        "0      2    1024   120.5       88.25   310.0       61.75           900.5\n"
        "1      2    4096  1650.0      101.50  4200.0       80.00          1001.0\n"
    )
    result = parse_text(tmp_path, text)
    rows = [(r.name, r.shape, r.us_median, r.metrics) for r in result.perf]
    assert rows[:2] == [
        ("fwd_us", "batch=2, seqlen=1024", 120.5, {"fwd_tflops": 88.25, "fwd_gb_per_sec": 900.5}),
        ("bwd_us", "batch=2, seqlen=1024", 310.0, {"bwd_tflops": 61.75}),
    ]
    assert len(rows) == 4 and result.correctness.passed is None


def test_pandas_to_string_without_index(tmp_path: Path) -> None:
    # pandas' to_string(index=False) puts a single space between columns
    text = (
        "[aiter] fused_qk_norm_rope summary:\n"
        "                            op           dim     m  ck us  ck TFLOPS  err triton_us\n"
        "                       rmsnorm (4, 32, 8192)    16    3.1       1.00 None      2.75\n"
        "rmsnorm_fused_add_dynamicquant     (1, 2, 3) 16384    NaN      12.25  0.0      None\n"
        "cu_count=80\n"
        "[aiter] finished\n"
    )
    result = parse_text(tmp_path, text)
    rows = [(r.name, r.shape, r.us_median, r.metrics) for r in result.perf]
    assert rows == [
        ("ck us", "op=rmsnorm, dim=(4, 32, 8192), m=16", 3.1, {"ck TFLOPS": 1.0}),
        ("triton_us", "op=rmsnorm, dim=(4, 32, 8192), m=16", 2.75, {}),
        ("ck us", "op=rmsnorm_fused_add_dynamicquant, dim=(1, 2, 3), m=16384", None, {"ck TFLOPS": 12.25}),
    ]
    assert result.failures == [
        "line 4: nan in column 'ck us' (op=rmsnorm_fused_add_dynamicquant, dim=(1, 2, 3), m=16384)"
    ]
    assert result.correctness.nan_count == 1
    assert result.correctness.shapes_checked == 1  # one row had a readable err
    assert result.correctness.passed is False
    assert result.problems == []


def test_summary_line_followed_by_noise_is_not_a_table(tmp_path: Path) -> None:
    text = (
        "[aiter] summary:\n"
        f"ck: [checkAllclose atol=0.01 rtol=0.01 {RED_FAILED}]\n"
        "Empty DataFrame summary:\n"
        "Empty DataFrame\n"
        "Columns: []\n"
    )
    result = parse_text(tmp_path, text)
    assert result.perf == []
    assert result.correctness.passed is False
    assert result.failures == ["line 2: checkAllclose failed! (atol=0.01 rtol=0.01) ck:"]


def test_a_new_logger_record_ends_a_pandas_table(tmp_path: Path) -> None:
    text = (
        "[aiter] summary:\n"
        "            dtype   m   ck us  ck err\n"
        "0  torch.bfloat16  16  3.2201     0.0\n"
        "[aiter] 1  torch.bfloat16  32  3.3012     0.0\n"  # aligned like a row once the prefix is gone
    )
    result = parse_text(tmp_path, text)
    assert [(r.shape, r.us_median) for r in result.perf] == [("dtype=torch.bfloat16, m=16", 3.2201)]


def test_wrapped_pandas_table_is_a_problem(tmp_path: Path) -> None:
    text = (
        "[aiter] summary:\n"
        "            dtype   m   ck us  \\\n"
        "0  torch.bfloat16  16  3.2201   \n"
        "\n"
        "   ck err  \n"
        "0     0.0  \n"
    )
    result = parse_text(tmp_path, text)
    assert result.problems == [
        "line 2: summary table is wrapped; only its first block is read; rerun with COLUMNS=10000"
    ]
    assert [(r.name, r.us_median) for r in result.perf] == [("ck us", 3.2201)]
    assert result.correctness.passed is None  # the err column was in the block not read


# ----- log formats ---------------------------------------------------------------------------


def test_aiter_log_more_format_with_jit_noise(tmp_path: Path) -> None:
    header = "[aiter INFO] 2026-08-22 10:11:12,345.345 - MainProcess:4242 - /opt/aiter/op_tests/test_quant.py:{} - {}\n"
    text = (
        header.format(200, "test_quant")
        + "ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]\n"
        + JIT_NOISE
        + header.format(90, "run_perftest")
        + "avg: 12.3 us/iter from cuda.Event\n"
        + header.format(300, "main")
        + "quant summary (markdown):\n"
        "| dtype          |    m |   ck us |   ck err |\n"
        "|:---------------|-----:|--------:|---------:|\n"
        "| torch.bfloat16 |    1 | 3.22013 |        0 |\n"
        + "2026-08-22T10:11:13.1234567Z [aiter] asm: [checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    result = parse_text(tmp_path, text)
    assert [c.label for c in result.checks] == ["ck:", "asm:"]
    assert [(r.name, r.us_median) for r in result.perf] == [("ck us", 3.22013)]
    assert result.correctness.passed is True


def test_check_words_whose_escape_byte_was_dropped(tmp_path: Path) -> None:
    text = "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 [31mfailed![0m]\n"
    result = parse_text(tmp_path, text)
    assert [c.status for c in result.checks] == ["failed"]
    assert result.correctness.passed is False


# ----- robustness ----------------------------------------------------------------------------


def test_missing_and_empty_files(tmp_path: Path) -> None:
    missing = parse_output(AITER_OP_TEST, tmp_path / "nope.txt")
    assert missing.problems == ["raw output file missing"]
    assert missing.correctness.passed is None and missing.parser == "aiter"
    empty = parse_text(tmp_path, b"")
    assert empty.correctness.passed is None and empty.lines_read == 0 and empty.bytes_read == 0
    directory = parse_output(AITER_OP_TEST, tmp_path)
    assert directory.correctness.passed is None and directory.problems


def test_non_utf8_bytes_and_truncation_never_raise(tmp_path: Path) -> None:
    good = (check_line("ck: ") + "\n" + MARKDOWN_GEMM).encode()
    noisy = b"\xff\xfe\x00garbage\x80\n" + good.replace(b"torch.bfloat16 |    32", b"torch.bf\xc3\x28\x16 |    32")
    result = parse_text(tmp_path, noisy)
    assert result.correctness.passed is True
    assert len(result.perf) == 5
    for cut in range(0, len(good), 7):
        parse_text(tmp_path, good[:cut], name=f"cut{cut}.txt")


# ----- the line reader and the text helpers --------------------------------------------------


def test_line_reader_splits_decodes_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\r\ntwo\n\nfour \xff\nlast-without-newline")
    reader = LineReader(path, chunk_size=3)  # lines straddle chunks
    assert list(reader) == [(1, "one"), (2, "two"), (3, ""), (4, "four \ufffd"), (5, "last-without-newline")]
    assert reader.bytes_read == path.stat().st_size and reader.lines_read == 5 and reader.truncated == 0


def test_line_reader_cuts_long_lines_and_reports_them(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"a" * 25 + b"\nafter\n" + b"b" * 11)
    seen: list[tuple[int, int]] = []
    lines = list(iter_lines(path, max_line=10, on_truncate=lambda n, size: seen.append((n, size))))
    assert lines == [(1, "short"), (2, "a" * 10), (3, "after"), (4, "b" * 10)]
    assert seen == [(2, 25), (4, 11)]
    reader = LineReader(path, max_line=10, chunk_size=4)
    assert [t for _, t in reader] == ["short", "a" * 10, "after", "b" * 10]
    assert reader.truncated_lines == [(2, 25), (4, 11)]


def test_strip_helpers() -> None:
    assert strip_ansi("ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]") == (
        "ck: [checkAllclose atol=0.01 rtol=0.01 passed~]"
    )
    assert strip_ansi("\x1b[1;31mred\x1b[0m \x1b[4Cline\x1b]0;title\x07") == "red line"
    assert strip_ansi("\x1b[1;31mred\x1b[0m \x1b[2Kline\x1b]0;title\x07") == "red \rline"  # an erase starts a piece
    assert strip_ci_prefix("2026-01-02T03:04:05.1234567Z [aiter] hello") == "[aiter] hello"
    assert strip_ci_prefix("[aiter] 2026-01-02T03:04:05Z hello") == "[aiter] 2026-01-02T03:04:05Z hello"


def test_aligned_columns_join_header_words_no_cell_ends_under() -> None:
    header = "         dtype     m  ck us  ck TFLOPS  hipmm bpreshuffle us"
    row = "torch.bfloat16 16384    9.8       1.50                 10.25"
    layout = aligned_columns(header, [row])
    assert layout is not None
    assert layout.names == ["dtype", "m", "ck us", "ck TFLOPS", "hipmm bpreshuffle us"]
    assert split_aligned_row(layout, row) == ["torch.bfloat16", "16384", "9.8", "1.50", "10.25"]
    assert split_aligned_row(layout, "cu_count=80") is None
