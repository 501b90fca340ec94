"""Correctness beyond allclose (per-shape lines: cosine_sim >= 0.99, max_abs_error; and the
logits_diff and SNR lines some kernels print): the line observer on its own, and through every parser that feeds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, TRITON_PYTEST
from pytest_gpuverify.parsers import parse_output
from pytest_gpuverify.parsers.reading.measures import MetricsObserver
from pytest_gpuverify.records.artifact import Correctness


def observe(*lines: str) -> tuple[MetricsObserver, list[str]]:
    failures: list[str] = []
    obs = MetricsObserver(failures.append)
    for lineno, text in enumerate(lines, start=1):
        obs.observe(lineno, text)
    return obs, failures


@pytest.mark.parametrize(
    "line, field, value",
    [
        ("cosine_sim=0.9987", "cosine_sim", 0.9987),
        ("cos_sim: 0.99", "cosine_sim", 0.99),
        ("Cosine Similarity: 0.99512", "cosine_sim", 0.99512),
        ("cosine similarity = 9.9e-01", "cosine_sim", 0.99),
        ("cos=0.99998 | t128-d7168x256-e256k8 |", "cosine_sim", 0.99998),
        ("  b=16, sk=4096: mincos=0.97", "cosine_sim", 0.97),
        ("max_abs_error=2.3e-4", "max_abs_error", 2.3e-4),
        ("max abs error: 0.5", "max_abs_error", 0.5),
        ("Max absolute error: 1.95e-03 (atol=0.01)", "max_abs_error", 1.95e-3),
        ("strict_pass=99.9% max_abs=3.125e-02 cos_diff=1.2e-05", "max_abs_error", 3.125e-2),
        ("Logits Diff: 0.000123, Max Diff: 0.003906, Mean Diff: 0.000101", "max_abs_error", 0.003906),
        ("E   Greatest absolute difference: 54.87 at index (399, 467) (up to 0.001 allowed)", "max_abs_error", 54.87),
        ("-->max abs delta:0.0625, delta details: 0.3% (12 of 4096) elements", "max_abs_error", 0.0625),
        ("logits_diff=0.0009", "logits_diff", 0.0009),
        ("Logits Diff: 0.000123, Max Diff: 0.003906, Mean Diff: 0.000101", "logits_diff", 0.000123),
        ("  aiter_asm: cos_diff=1.20e-05  TFLOPS=123.45  TB/s=4.56", "logits_diff", 1.2e-5),
        ("SNR: 31.2 dB", "snr_db", 31.2),
        ("snr_db=27.5", "snr_db", 27.5),
        ("fp8 gemm snr = 40", "snr_db", 40.0),
        ("SNR (dB): 35.25", "snr_db", 35.25),
    ],
)
def test_each_printed_form_is_read(line: str, field: str, value: float) -> None:
    obs, failures = observe(line)
    assert obs.values[field] == pytest.approx(value)
    assert failures == []


def test_worst_value_is_kept_min_cosine_and_snr_max_errors() -> None:
    obs, _ = observe(
        "shape 1: cos_sim=0.9999 snr=41.0 max_abs_error=1e-3 logits_diff=1e-5",
        "shape 2: cos_sim=0.9912 snr=33.5 max_abs_error=4e-3 logits_diff=3e-4",
        "shape 3: cos_sim=0.9990 snr=38.0 max_abs_error=2e-3 logits_diff=2e-5",
    )
    assert obs.values == {"cosine_sim": 0.9912, "snr_db": 33.5, "max_abs_error": 4e-3, "logits_diff": 3e-4}
    correctness = Correctness()
    obs.apply(correctness)
    assert (correctness.cosine_sim, correctness.snr_db) == (0.9912, 33.5)
    assert (correctness.max_abs_error, correctness.logits_diff) == (4e-3, 3e-4)


@pytest.mark.parametrize(
    "line",
    [
        "[aiter] finish build [module_quant], cost 39.6s",  # "cos" inside "cost"
        "    cos_sim >= 0.99, f'cos_sim too low'",  # a comparison, not a printed value
        "acos=0.5 atan2=1.0",  # another function whose name ends in cos
        "max_jobs=16 max_seqlen=4096",
        "snr threshold 30 dB",  # no value after a colon or equals sign
        "MAX_ABS_ERROR_THRESHOLD=0.1",
        "cosine_sim=0.99x",  # not a number
    ],
)
def test_lookalikes_are_not_read(line: str) -> None:
    obs, failures = observe(line)
    assert obs.values == {"cosine_sim": None, "max_abs_error": None, "logits_diff": None, "snr_db": None}
    assert failures == [] and obs.nan_count == 0


def test_nothing_printed_means_none_never_a_made_up_value() -> None:
    obs, _ = observe("[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]", "3 passed in 0.5s")
    correctness = Correctness()
    obs.apply(correctness)
    assert correctness.model_dump() == Correctness().model_dump()


def test_nan_is_counted_and_is_a_failure() -> None:
    obs, failures = observe("cos_sim=nan", "max_abs_error: inf", "SNR: -inf dB", "snr=inf")
    assert obs.nan_count == 3
    assert failures == ["line 1: cosine_sim is nan", "line 2: max_abs_error is inf", "line 3: snr_db is -inf"]
    assert obs.values["cosine_sim"] is None and obs.values["snr_db"] is None  # +inf SNR: identical, not kept


def test_aiter_delta_nan_is_left_to_the_aiter_parser() -> None:
    obs, failures = observe("-->max abs delta:nan, delta details: 100.0% (4096 of 4096) elements")
    assert obs.nan_count == 0 and failures == [] and obs.values["max_abs_error"] is None


# ----- through every parser ------------------------------------------------------------------

AITER_OUTPUT = """\
[aiter] start build [module_gemm] under /opt/aiter/aiter/jit/build/module_gemm
[aiter] finish build [module_gemm], cost 39.6s
[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]
[aiter] triton: [checkAllclose atol=0.01 rtol=0.01 \x1b[33mwarning!\x1b[0m] a and b results are not all close
[aiter] -->max abs delta:0.0625, delta details: 0.3% (12 of 4096) elements
[aiter] fp8 gemm: cos_sim=0.9991 snr=31.2 dB logits_diff=0.0004
"""

FLYDSL_OUTPUT = """\
==================================== PASSES ====================================
_______________________________ test_moe[fp8] _______________________________
----------------------------- Captured stdout call -----------------------------
cos=0.99731 | t128-d7168x256-e256k8 |
Max absolute error: 3.91e-03 (atol=0.01)
=========================== short test summary info ============================
PASSED tests/kernels/test_moe_gemm_2stage.py::test_moe[fp8]
============================== 1 passed in 4.20s ===============================
"""

TRITON_OUTPUT = """\
op_tests/triton_tests/attention/test_fav3_sage.py .                      [100%]
==================================== PASSES ====================================
__________________________________ test_sage __________________________________
----------------------------- Captured stdout call -----------------------------
Cosine Similarity: 0.998741
=========================== short test summary info ============================
PASSED op_tests/triton_tests/attention/test_fav3_sage.py::test_sage
1 passed in 12.50s
"""

BENCH_OUTPUT = """\
[A] gemm M=128 N=4096 K=4096: 41.2 us, cos_sim=0.9995, snr_db=38.1
[B] gemm M=128 N=4096 K=4096: 39.9 us, cos_sim=0.9989, snr_db=36.4
"""


@pytest.mark.parametrize(
    "kind, text, expected",
    [
        (
            AITER_OP_TEST,
            AITER_OUTPUT,
            {"cosine_sim": 0.9991, "snr_db": 31.2, "logits_diff": 0.0004, "max_abs_error": 0.0625},
        ),
        (FLYDSL_PYTEST, FLYDSL_OUTPUT, {"cosine_sim": 0.99731, "max_abs_error": 3.91e-3}),
        (TRITON_PYTEST, TRITON_OUTPUT, {"cosine_sim": 0.998741}),
        (BENCH, BENCH_OUTPUT, {"cosine_sim": 0.9989, "snr_db": 36.4}),
    ],
)
def test_every_parser_fills_the_fields(tmp_path: Path, kind: str, text: str, expected: dict) -> None:
    path = tmp_path / "out.txt"
    path.write_text(text)
    result = parse_output(kind, path)
    got = result.correctness.model_dump(include={"cosine_sim", "snr_db", "logits_diff", "max_abs_error"})
    assert got == {field: expected.get(field) for field in got}, result.failures
    assert not result.failures


@pytest.mark.parametrize("kind", [AITER_OP_TEST, FLYDSL_PYTEST, TRITON_PYTEST, BENCH])
def test_a_nan_measure_fails_every_parser(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "out.txt"
    path.write_text("[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]\ncos_sim=nan\n3 passed in 0.1s\n")
    result = parse_output(kind, path)
    assert result.correctness.passed is False
    assert result.correctness.nan_count >= 1
    assert any("cosine_sim is nan" in f for f in result.failures)
