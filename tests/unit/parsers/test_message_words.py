"""A reason's words say what was printed: a sentence's first word is no shape label, a line with no
label is named once, and a perf row's name says the unit its figures are kept in (microseconds). Each
output is read with the prefilter on (each engine) and off, which must agree."""

from __future__ import annotations

import pytest
from parse_cases import read_agreeing

from pytest_gpuverify.config.targets import BENCH, Thresholds

pytestmark = pytest.mark.usefixtures("engine")

LIMIT = Thresholds(max_abs_error_max=0.01)


@pytest.mark.parametrize(
    "printed",
    ["The max_abs_error: 0.973322", "The maximum absolute error: 0.973322", "Max abs error: 0.973322"],
)
def test_a_sentence_names_no_shape_and_a_line_is_named_once(printed: str) -> None:
    parsed = read_agreeing(printed + "\n", BENCH, noise=None, thresholds=LIMIT)
    assert parsed.failures == ["line 1: max_abs_error 0.973322 is above the declared limit 0.01"]


def test_a_shape_label_is_kept() -> None:
    parsed = read_agreeing("gemm M=128 N=64: max_abs_error: 0.97\n", BENCH, noise=None, thresholds=LIMIT)
    assert parsed.failures == ["line 1: gemm M=128 N=64: max_abs_error 0.97 is above the declared limit 0.01"]


def test_a_perf_report_row_in_ms_is_named_in_us() -> None:
    parsed = read_agreeing(
        "fused-attention-fwd:\n"
        "     N_CTX  fused (Execution Time (ms))  torch (Execution Time (ms))\n"
        "0   1024.0                     0.084992                    0.840208\n",
        BENCH,
        noise=None,
    )
    rows = {r.name: r.us_median for r in parsed.perf}
    assert rows == {"fused (Execution Time (us))": 84.992, "torch (Execution Time (us))": 840.208}
