"""torch.utils.benchmark's Compare tables (parsers/recognizers/torch_compare.py), from xformers' and
flash-attention's benchmark outputs: every time a perf row in the unit printed after the table."""

from __future__ import annotations

import pytest
from parse_cases import read_agreeing

from pytest_gpuverify.config.targets import BENCH, PYTEST

# xformers' benchmark_mem_eff_attention.py (facebookresearch/xformers#389), its first table
COMPARE = (
    "[----------- attention (attn_bias=<class 'NoneType'>) ----------]\n"
    "                                        |  xformers  |  flashattn\n"
    "1 threads: ------------------------------------------------------\n"
    "      f16 fwd_gen B=160, M=8096, K=128  |   49828.0  |    88721.0\n"
    "      f32 fwd_gen B=160, M=8096, K=128  |  207993.3  |           \n"  # (an empty cell, as printed)
    "\n"
    "Times are in microseconds (us).\n"
)


pytestmark = pytest.mark.usefixtures("engine")


def rows(text: str, kind: str = BENCH):
    return read_agreeing(text, kind, chunk=61, noise=None)


@pytest.mark.parametrize("kind", [BENCH, PYTEST])
def test_each_time_is_a_row_in_the_printed_unit(kind: str) -> None:
    parsed = rows(COMPARE, kind)
    assert [(r.table, r.shape, r.name, r.us_median) for r in parsed.perf] == [
        ("attention (attn_bias=<class 'NoneType'>)", "f16 fwd_gen B=160, M=8096, K=128", "xformers", 49828.0),
        ("attention (attn_bias=<class 'NoneType'>)", "f16 fwd_gen B=160, M=8096, K=128", "flashattn", 88721.0),
        ("attention (attn_bias=<class 'NoneType'>)", "f32 fwd_gen B=160, M=8096, K=128", "xformers", 207993.3),
    ]
    assert not parsed.problems or kind == PYTEST  # (a pytest kind also says it read no pytest result)


def test_milliseconds_become_microseconds_and_threads_join_the_shape() -> None:
    text = COMPARE.replace("microseconds (us)", "milliseconds (ms)").replace(
        "      f32 fwd_gen", "4 threads: ----------------\n      f32 fwd_gen"
    )
    parsed = rows(text)
    assert [(r.shape, r.us_median) for r in parsed.perf] == [
        ("f16 fwd_gen B=160, M=8096, K=128, threads=1", 49828000.0),
        ("f16 fwd_gen B=160, M=8096, K=128, threads=1", 88721000.0),
        ("f32 fwd_gen B=160, M=8096, K=128, threads=4", 207993300.0),
    ]


def test_a_table_without_its_unit_line_keeps_its_figures_under_their_column() -> None:
    parsed = rows(COMPARE.replace("Times are in microseconds (us).\n", "done\n"))
    assert [(r.us_median, r.metrics) for r in parsed.perf][:2] == [
        (None, {"xformers": 49828.0}),
        (None, {"flashattn": 88721.0}),
    ]


def test_a_long_title_without_dashes_and_a_nan_time() -> None:
    parsed = rows(
        COMPARE.replace(
            "[----------- attention (attn_bias=<class 'NoneType'>) ----------]",
            "[ attention (attn_bias=<class 'xformers.ops.LowerTriangularMask'>) ]",
        ).replace("88721.0", "nan")
    )
    assert {r.table for r in parsed.perf} == {"attention (attn_bias=<class 'xformers.ops.LowerTriangularMask'>)"}
    assert parsed.correctness.nan_count == 1 and parsed.correctness.passed is False
