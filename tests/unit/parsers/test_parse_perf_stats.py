"""Perf rows that say what they are: one row per measured quantity, its ``stat``
from the column name, min/max/count in ``min_us``/``max_us``/``runs``, spread in ``metrics``; and
``gpuverify check`` re-deriving the same rows from the raw output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH
from pytest_gpuverify.parsers import parse_output
from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.verify.check import _compare_output

PASSED = "[checkAllclose atol=0.01 rtol=0.01 passed~]"

AB_TABLE = f"""{PASSED}
round  side     M     N  us_median  min_us  max_us  runs
    1     A  4096  4096      41.20   40.10   43.00   100
    1     B  4096  4096      39.90   39.00   41.50   100
    2     A  4096  4096      41.00   40.00   42.90   100
    2     B  4096  4096      39.80   38.90   41.20   100
"""

AB_MARKDOWN = f"""{PASSED}
| round | side | M | N | us_median | min_us | max_us | runs |
|------:|:-----|--:|--:|----------:|-------:|-------:|-----:|
| 1 | A | 4096 | 4096 | 41.20 | 40.10 | 43.00 | 100 |
| 1 | B | 4096 | 4096 | 39.90 | 39.00 | 41.50 | 100 |
"""


def parse(tmp_path: Path, text: str, kind: str):
    path = tmp_path / "out.txt"
    path.write_text(text)
    return parse_output(kind, path), path


def test_an_ab_table_gives_one_row_per_round_side_and_shape(tmp_path: Path) -> None:
    parsed, _ = parse(tmp_path, AB_TABLE, BENCH)
    rows = [(r.shape, r.side, r.name, r.stat, r.us_median, r.min_us, r.max_us, r.runs) for r in parsed.perf]
    assert rows == [
        ("round=1, M=4096, N=4096", "A", "us_median", "median", 41.2, 40.1, 43.0, 100),
        ("round=1, M=4096, N=4096", "B", "us_median", "median", 39.9, 39.0, 41.5, 100),
        ("round=2, M=4096, N=4096", "A", "us_median", "median", 41.0, 40.0, 42.9, 100),
        ("round=2, M=4096, N=4096", "B", "us_median", "median", 39.8, 38.9, 41.2, 100),
    ]
    assert all(r.metrics == {} for r in parsed.perf)


@pytest.mark.parametrize("kind", [AITER_OP_TEST, BENCH])
def test_an_ab_markdown_table_too(tmp_path: Path, kind: str) -> None:
    parsed, _ = parse(tmp_path, AB_MARKDOWN, kind)
    rows = [(r.stat, r.us_median, r.min_us, r.max_us, r.runs) for r in parsed.perf]
    assert rows == [("median", 41.2, 40.1, 43.0, 100), ("median", 39.9, 39.0, 41.5, 100)]
    assert all("runs" not in r.shape and "min_us" not in r.shape for r in parsed.perf)


def test_a_mean_only_harness_says_mean_and_spread_goes_to_metrics(tmp_path: Path) -> None:
    text = f"""{PASSED}
kernel     M     N  mean_us  p99_us  stdev_us  TFLOPS
gemm    4096  4096    41.20   45.00      0.80   667.1
"""
    parsed, _ = parse(tmp_path, text, BENCH)
    [row] = parsed.perf
    # a mean is no median: us_median stays null, the mean is kept in metrics with its unit
    assert (row.name, row.stat, row.us_median, row.min_us, row.max_us) == ("mean_us", "mean", None, None, None)
    assert row.metrics == {"TFLOPS": 667.1, "mean_us": 41.2, "p99_us": 45.0, "stdev_us": 0.8}


def test_aiter_avg_lines_are_means(tmp_path: Path) -> None:
    text = f"[perf] dim: (4, 32, 8192), dtype: bf16, torch avg: 16.19 us, B avg: 6.30 us, uplift: 50.0% {PASSED}\n"
    parsed, _ = parse(tmp_path, text, AITER_OP_TEST)
    assert [(r.name, r.stat, r.us_median, r.metrics) for r in parsed.perf] == [
        ("torch", "mean", None, {"mean_us": 16.19}),
        ("B", "mean", None, {"mean_us": 6.30, "uplift_pct": 50.0}),
    ]
    assert {r.shape for r in parsed.perf} == {"dim=(4, 32, 8192), dtype=bf16"}  # no uplift in the shape


def test_a_min_only_time_is_no_median(tmp_path: Path) -> None:
    text = f"""{PASSED}
| M | ck min us | triton us |
|--:|----------:|----------:|
| 16 | 3.1 | 4.2 |
"""
    parsed, _ = parse(tmp_path, text, AITER_OP_TEST)
    rows = [(r.name, r.stat, r.us_median, r.min_us) for r in parsed.perf]
    assert rows == [("ck min us", "min", None, 3.1), ("triton us", None, 4.2, None)]


@pytest.mark.parametrize("text, kind", [(AB_TABLE, BENCH), (AB_MARKDOWN, AITER_OP_TEST)])
def test_check_re_derives_the_same_rows(tmp_path: Path, text: str, kind: str) -> None:
    parsed, path = parse(tmp_path, text, kind)
    art = Artifact.model_construct(perf=parsed.perf, correctness=parsed.correctness)
    assert _compare_output(art, parse_output(kind, path)) == []
    tampered = Artifact.model_construct(
        perf=[r.model_copy(update={"min_us": 1.0}) for r in parsed.perf], correctness=parsed.correctness
    )
    assert any("min_us is 1.0" in p for p in _compare_output(tampered, parse_output(kind, path)))


def test_a_measured_figure_on_a_perf_line_is_no_part_of_the_shape(tmp_path: Path) -> None:
    text = (
        f"[perf] dim: (4, 32, 8192), dtype: bf16, uplift: 1.2x, speedup: 2.0, ck: 10.0 us, TFLOPS: 5.0 {PASSED}\n"
        f"[perf] dim: (4, 32, 8192), dtype: bf16, uplift: 3.0x, speedup: 4.0, ck: 5.0 us, TFLOPS: 9.0 {PASSED}\n"
    )
    parsed, _ = parse(tmp_path, text, AITER_OP_TEST)
    assert [r.shape for r in parsed.perf] == ["dim=(4, 32, 8192), dtype=bf16"] * 2  # the same case, comparable
    assert parsed.perf[0].metrics == {"uplift": 1.2, "speedup": 2.0, "TFLOPS": 5.0}


@pytest.mark.parametrize(
    "unit, printed, us",
    [
        ("ms", "0.0123", 12.3),
        ("ns", "12300", 12.3),
        ("s", "0.0000123", 12.3),
        ("us", "12.3", 12.3),
        ("µs", "12.3", 12.3),
    ],
)
def test_times_in_any_unit_become_microseconds(tmp_path: Path, unit: str, printed: str, us: float) -> None:
    text = f"""{PASSED}
kernel      M  median ({unit})   TB/s
gemm     4096  {printed:>11}   1.25
"""
    parsed, _ = parse(tmp_path, text, BENCH)
    [row] = parsed.perf
    assert (row.stat, row.us_median, row.metrics) == ("median", us, {"TB/s": 1.25})


def test_a_markdown_time_in_ms_becomes_microseconds(tmp_path: Path) -> None:
    text = f"""{PASSED}
| M | ck (ms) | ck TFLOPS | triton median ns |
|--:|--------:|----------:|-----------------:|
| 16 | 0.0123 | 1.5 | 4200 |
"""
    parsed, _ = parse(tmp_path, text, AITER_OP_TEST)
    rows = [(r.name, r.stat, r.us_median, r.metrics) for r in parsed.perf]
    assert rows == [("ck (us)", None, 12.3, {"ck TFLOPS": 1.5}), ("triton median us", "median", 4.2, {})]


def test_printed_us_reads_each_rows_own_time(tmp_path: Path) -> None:
    from pytest_gpuverify.parsers.perfstats import printed_us

    text = f"""{PASSED}
kernel     M  mean_us  min_us
gemm    4096    41.20   40.00
"""
    parsed, _ = parse(tmp_path, text, BENCH)
    assert [printed_us(r) for r in parsed.perf] == [41.2]  # what `gpuverify show` prints for the row
