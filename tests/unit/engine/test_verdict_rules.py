"""The verdict's rules, output by output: the output dtype from every source (and which aiter
columns are NOT the output dtype), per-shape cosine_sim lines, declared pass/fail words, NaN in a
printed result, ``err_ratio_max``. Each output goes through the engine's own path: the parser of the
target's kind (prefilter on), then the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parse_cases import VALID

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, TRITON_PYTEST, Thresholds
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import RunRecord

PYTEST = "pytest"  # the kind's name, spelt out: these tests also run against code without it


def verdict(tmp_path: Path, text: str, kind: str = AITER_OP_TEST, **context):
    """(verdict, reasons, correctness) of ``text`` as the output of a clean exit-0 run."""
    path = tmp_path / "out.txt"
    path.write_text(text, encoding="utf-8")
    ctx = ParseContext(**context)
    parsed = parse_output(kind, path, ctx)
    v, reasons = verdict_and_reasons(RunRecord(ran=True, exit_code=0), parsed, ctx.thresholds)
    return v, reasons, parsed.correctness


NOISE = "[aiter] start build [module_gemm] under /opt/aiter/jit/build\n" * 50


def summary(column: str, value: str, extra: str = "") -> str:
    """An aiter markdown summary: a bf16 ``dtype`` column (unless it is the one tested), ``column``
    holding ``value``, a passed check before it."""
    dtype_col = column != "dtype"
    head = ("| dtype " if dtype_col else "") + f"| {column} | m | ck us | ck err |"
    sep = ("|:--" if dtype_col else "") + "|:--|--:|--:|--:|"
    rows = [("| torch.bfloat16 " if dtype_col else "") + f"| {value} | {m} | 3.2 | 0 |" for m in (16, 32)]
    return (
        NOISE
        + "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]\n"
        + extra
        + "[aiter] gemm summary (markdown):\n"
        + "\n".join([head, sep, *rows])
        + "\n"
    )


# -- the output dtype ------------------------------------------------------------------------------

OUTPUT_COLUMNS = ["dtype", "out_dtype", "output_dtype", "dtype_out", "otype", "o_dtype"]
# quantisation of the inputs (a8w8: fp8 in, bf16 out; moe AQDType/WQDType; test_quant's q_dtype, an
# exact element-wise check of torch's own quantisation), and other inputs: never the output dtype
NOT_OUTPUT_COLUMNS = [
    "quantDtype",
    "q_dtype",
    "qType",
    "quant_type",
    "quant",
    "AQDType",
    "WQDType",
    "kv_dtype",
    "w_dtype",
    "h_dtype",
    "in_dtype",
    "ref_dtype",
]


@pytest.mark.parametrize("column", OUTPUT_COLUMNS)
def test_an_output_dtype_column_of_fp8_needs_an_snr(tmp_path, column):
    v, reasons, c = verdict(tmp_path, summary(column, "torch.float8_e4m3fnuz"))
    line = NOISE.count("\n") + 5
    assert v == "INCONCLUSIVE" and reasons == [
        f"torch.float8_e4m3fnuz output without an SNR (dtype from output line {line}: column '{column}')"
    ]
    assert (c.dtype, c.dtype_source) == ("torch.float8_e4m3fnuz", f"output line {line}: column '{column}'")


@pytest.mark.parametrize("column", NOT_OUTPUT_COLUMNS)
def test_an_input_quantisation_column_is_not_the_output_dtype(tmp_path, column):
    v, reasons, c = verdict(tmp_path, summary(column, "torch.float8_e4m3fnuz"))
    assert v == "PASS", reasons
    assert c.dtype == "torch.bfloat16" and c.dtype_source.endswith("column 'dtype'")


def test_the_fp8_op_test_passes_with_an_snr_per_shape_and_keeps_the_lowest(tmp_path):
    snr = "".join(f"[aiter] m={m} n=1536 k=7168: SNR: {s} dB\n" for m, s in ((16, 31.2), (32, 27.9), (64, 30.0)))
    v, reasons, c = verdict(tmp_path, summary("dtype", "torch.float8_e4m3fnuz", extra=snr))
    assert v == "PASS" and c.snr_db == 27.9, reasons


def test_the_legacy_perf_line_reads_dtype_and_not_quant_dtype(tmp_path):
    # committed_log_test_gemm_a8w8_skinny.txt: fp8 inputs, bf16 output
    line = (
        "[aiter] a,b: [perf] dim: (4, 32, 8192)        dtype: torch.bfloat16, quantDtype: torch.float8_e4m3fnuz, "
        "torch avg: 39.61    us, skinny_gemm avg: 7.70     us, uplift: 414.2%[checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    )
    v, reasons, c = verdict(tmp_path, line)
    assert v == "PASS" and (c.dtype, c.dtype_source) == ("torch.bfloat16", "output line 1: dtype="), reasons
    v, reasons, c = verdict(tmp_path, line.replace("dtype: torch.bfloat16", "dtype: torch.float8_e4m3fn"))
    assert v == "INCONCLUSIVE" and reasons == [
        "torch.float8_e4m3fn output without an SNR (dtype from output line 1: dtype=)"
    ]


def test_the_command_s_dtype_argument_counts(tmp_path):
    text = summary("dtype", "torch.bfloat16")
    v, reasons, c = verdict(tmp_path, text, command="python3 op_tests/test_gemm_a8w8.py -d bf16 fp8 -q fp8")
    assert v == "INCONCLUSIVE" and reasons == ["fp8 output without an SNR (dtype from command: -d bf16 fp8)"]
    v, _, c = verdict(tmp_path, text, command="python3 op_tests/test_gemm_a8w8.py -q fp8 -o out.csv")
    assert v == "PASS" and c.dtype == "torch.bfloat16"


def test_the_declared_dtype_comes_first_and_low_precision_anywhere_wins(tmp_path):
    text = summary("dtype", "torch.bfloat16")
    _, _, c = verdict(tmp_path, text, dtype="bf16", command="python3 x.py -d fp16")
    assert (c.dtype, c.dtype_source) == ("bf16", "declaration")
    v, reasons, c = verdict(tmp_path, summary("dtype", "torch.float4_e2m1fn_x2"), dtype="bf16")
    assert v == "INCONCLUSIVE" and c.dtype == "torch.float4_e2m1fn_x2", "a declared bf16 never hides an fp4 output"
    v, reasons, _ = verdict(tmp_path, text, dtype="mxfp4")
    assert reasons == ["mxfp4 output without an SNR (dtype from declaration)"]


@pytest.mark.parametrize(
    "command, expected",
    [
        ("python3 t.py -d fp8", ("fp8", "command: -d fp8")),
        ("python3 t.py --dtype=fp4x2 -m 128", ("fp4x2", "command: --dtype fp4x2")),
        ("python3 t.py -d bf16,fp8", ("fp8", "command: -d bf16,fp8")),
        ("python3 t.py --otype fp8", ("fp8", "command: --otype fp8")),
        ("python3 t.py -d bf16 -m 1", ("bf16", "command: -d bf16")),
        ("python3 t.py -q fp8 -o fp8.csv -d_qk_v 128", None),
        ("python3 t.py 'unclosed", None),
        (None, None),
    ],
)
def test_dtype_arguments(command, expected):
    from pytest_gpuverify.parsers.dtypes import dtype_from_command

    assert dtype_from_command(command) == expected


@pytest.mark.parametrize(
    "dtype",
    [
        "fp8",
        "FP8",
        "torch.float8_e4m3fnuz",
        "torch.float8_e4m3fn",
        "float8_e5m2",
        "fp4x2",
        "torch.float4_e2m1fn_x2",
        "mxfp4",
        "e4m3",
        "E5M2",
        "fp8e4nv",
        "fp6",
    ],
)
def test_low_precision_spellings(dtype):
    from pytest_gpuverify.parsers.dtypes import is_low_precision

    assert is_low_precision(dtype)


@pytest.mark.parametrize(
    "dtype", ["bf16", "fp16", "torch.float16", "fp32", "torch.float64", "i8", "int4", "i4x2", "fp64"]
)
def test_not_low_precision(dtype):
    from pytest_gpuverify.parsers.dtypes import is_low_precision

    assert not is_low_precision(dtype)


# -- per-shape lines: cosine_sim and max_abs_error ----------------------------------------------------


def per_shape(worst: float = 0.9987, word: str = " PASS") -> str:
    lines = [
        f"M={m} N=4096: cosine_sim={worst if m == 128 else 0.9995}, "
        f"max_abs_error={'2.3e-04' if m == 128 else '1.1e-04'}{word}"
        for m in (1, 16, 32, 64, 128, 256, 512, 1024)
    ]
    return "\n".join(lines) + "\nAll 8 tests passed\n"


@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST])
def test_per_shape_output_passes_with_its_shapes(tmp_path, kind):
    v, reasons, c = verdict(tmp_path, per_shape(), kind)
    assert v == "PASS", reasons
    assert (c.passed, c.shapes_checked, c.checks_passed, c.cosine_sim, c.max_abs_error) == (True, 8, 8, 0.9987, 2.3e-04)


@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST])
def test_one_shape_below_the_default_fails(tmp_path, kind):
    v, reasons, c = verdict(tmp_path, per_shape(0.95), kind)
    assert v == "FAIL" and reasons == ["line 5: M=128 N=4096: cosine_sim 0.95 is below the default 0.99"]
    assert c.checks_failed == 1 and c.checks_passed == 7


def test_a_declared_limit_is_applied_per_shape(tmp_path):
    v, reasons, _ = verdict(tmp_path, per_shape(), BENCH, thresholds=Thresholds(cosine_sim_min=0.999))
    assert v == "FAIL" and reasons == ["line 5: M=128 N=4096: cosine_sim 0.9987 is below the declared limit 0.999"]
    v, reasons, _ = verdict(tmp_path, per_shape(), BENCH, thresholds=Thresholds(max_abs_error_max=2e-4))
    assert v == "FAIL" and reasons == ["line 5: M=128 N=4096: max_abs_error 0.00023 is above the declared limit 0.0002"]


def test_the_h200_harness_meets_its_declared_limit(tmp_path):
    text = "".join(f"N={n}: cosine_sim=1.000000\n" for n in (512, 1024, 2048, 4096))
    v, reasons, c = verdict(tmp_path, text, BENCH, thresholds=Thresholds(cosine_sim_min=0.99))
    assert v == "PASS" and c.passed is True and c.shapes_checked == 4, reasons


def test_a_printed_fail_word_fails_the_shape(tmp_path):
    v, reasons, _ = verdict(tmp_path, "M=64 N=128: cosine_sim=0.9999 max_abs_error=1e-05 FAIL\n", BENCH)
    assert v == "FAIL" and reasons == ["line 1: M=64 N=128: printed FAIL"]
    v, reasons, _ = verdict(tmp_path, "[FAILED] M=64: cosine_sim=0.9999 (PASS before the rerun)\n", BENCH)
    assert v == "FAIL" and reasons == ["line 1: [FAILED] M=64: printed FAILED"]


def test_a_measure_with_no_limit_and_no_word_is_no_result(tmp_path):
    v, reasons, c = verdict(tmp_path, "M=64 N=128: max_abs_error=1e-05\n", BENCH)
    assert v == "INCONCLUSIVE" and c.shapes_checked == 0 and c.max_abs_error == 1e-05
    v, reasons, c = verdict(tmp_path, "M=64 N=128: max_abs_error=1e-05 PASS\n", BENCH)
    assert v == "PASS" and c.shapes_checked == 1, "the printed word is the shape's outcome"


def test_a_limit_declared_but_never_printed_stays_inconclusive(tmp_path):
    v, reasons, _ = verdict(tmp_path, per_shape(), BENCH, thresholds=Thresholds(logits_diff_max=2e-3))
    assert v == "INCONCLUSIVE" and reasons == [
        "logits_diff limit 0.002 declared, but the output printed no logits_diff"
    ]


def test_a_summary_with_measures_is_not_a_shape(tmp_path):
    v, _, c = verdict(
        tmp_path, per_shape().replace("All 8 tests passed", "All 8 tests passed, cosine_sim=0.9987"), BENCH
    )
    assert v == "PASS" and c.shapes_checked == 8


# -- declared words, NaN in the result, err_ratio_max -------------------------------------------------

WORDS = {"pass_pattern": "✅ Triton and Torch match", "fail_pattern": "❌ Triton and Torch differ"}


@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST, PYTEST, TRITON_PYTEST, FLYDSL_PYTEST])
def test_declared_words(tmp_path, kind):
    base = VALID[TRITON_PYTEST if kind == PYTEST else kind] if kind in (PYTEST, TRITON_PYTEST, FLYDSL_PYTEST) else NOISE
    v, reasons, c = verdict(tmp_path, base + "✅ Triton and Torch match\n", kind, **WORDS)
    assert v == "PASS" and c.checks_passed >= 1, reasons
    v, reasons, _ = verdict(
        tmp_path, base + "❌ Triton and Torch differ\n" + "✅ Triton and Torch match\n", kind, **WORDS
    )
    line = base.count("\n") + 1
    assert v == "FAIL" and f"line {line}: fail_pattern matches: ❌ Triton and Torch differ" in reasons


def test_undeclared_words_prove_nothing(tmp_path):
    """Words no verdict line reads; the default verdict lines (printout.py) read Triton's, unless turned off."""
    assert verdict(tmp_path, "kernel looks fine to me\n", BENCH)[0] == "INCONCLUSIVE"
    assert (
        verdict(tmp_path, "✅ Triton and Torch match\n", BENCH, verdict_lines_off=("check-mark",))[0] == "INCONCLUSIVE"
    )


@pytest.mark.parametrize(
    "printed",
    [
        "output: nan",
        "triton_out = tensor([1.0000, nan, 3.0000], device='cuda:0')",
        "out: tensor([[1., 2.],\n        [3., inf]], device='cuda:0')",
        "tensor([nan, nan, nan], device='cuda:0', dtype=torch.bfloat16)",
        "Kernel result: -inf",
        "output:\u2009NaN",  # a Unicode space, another case
    ],
)
@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST, PYTEST])
@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_nan_in_the_printed_result_fails(tmp_path, printed, kind, engine, monkeypatch):
    from pytest_gpuverify.parsers.reading import hsscan, prefilter

    if engine == "hyperscan" and not hsscan.available():
        pytest.skip("no hyperscan wheel here")
    monkeypatch.setattr(prefilter, "ENGINE", engine)  # both engines must hand the line over
    base = VALID[TRITON_PYTEST] if kind == PYTEST else "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]\n"
    v, reasons, c = verdict(tmp_path, base + NOISE + printed + "\n" + NOISE, kind)
    assert v == "FAIL" and c.nan_count >= 1
    assert any("NaN/inf in the printed result" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "printed",
    [
        "mask: tensor([[0., -inf], [0., 0.]])",  # an attention mask prints -inf: it is no result
        "tensor([[0., -inf],\n        [0., 0.]])",
        "out: tensor([1., 2.])\n[0., nan] is what the reference would print",  # the tensor was closed
        "inference time: 3 ms",
    ],
)
def test_lookalikes_are_no_nan_finding(tmp_path, printed):
    v, reasons, c = verdict(tmp_path, "[checkAllclose atol=0.01 rtol=0.01 passed~]\n" + printed + "\n", BENCH)
    assert v == "PASS" and c.nan_count == 0, reasons


ERR_TABLE = "gemm summary (markdown):\n| m | us | err |\n|--:|---:|----:|\n| 16 | 3.2 | {err} |\n"


def test_err_ratio_max_is_the_err_columns_limit(tmp_path):
    v, reasons, c = verdict(tmp_path, ERR_TABLE.format(err=0.03), thresholds=Thresholds(err_ratio_max=0.01))
    assert v == "FAIL" and reasons[0] == "line 4: err 0.03 > 0.01 (the declared err_ratio_max) in column 'err' (m=16)"
    assert c.err_ratio == 0.03
    assert verdict(tmp_path, ERR_TABLE.format(err=0.03))[0] == "PASS"  # aiter's own tolerance is 0.05
    assert verdict(tmp_path, ERR_TABLE.format(err=0.1), thresholds=Thresholds(err_ratio_max=0.2))[0] == "PASS"


def test_err_ratio_max_without_an_err_column_is_inconclusive(tmp_path):
    v, reasons, _ = verdict(tmp_path, per_shape(), BENCH, thresholds=Thresholds(err_ratio_max=0.05))
    assert v == "INCONCLUSIVE" and reasons == ["err_ratio limit 0.05 declared, but the output printed no err_ratio"]


# -- a fuzzer: a failing line of these rules anywhere in a passing output never gets PASS ------------

FAILING_LINES = [
    ("M=7 N=9: cosine_sim=0.95, max_abs_error=1e-3 PASS", (BENCH, AITER_OP_TEST)),
    ("M=7 N=9: cosine_sim=0.9999 FAIL", (BENCH, AITER_OP_TEST)),
    ("output: nan", (BENCH, AITER_OP_TEST, PYTEST, TRITON_PYTEST, FLYDSL_PYTEST)),
    ("tensor([1.0, nan])", (BENCH, AITER_OP_TEST, PYTEST, TRITON_PYTEST, FLYDSL_PYTEST)),
    ("❌ Triton and Torch differ", (BENCH, AITER_OP_TEST, PYTEST, TRITON_PYTEST, FLYDSL_PYTEST)),
]


@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST, PYTEST, TRITON_PYTEST, FLYDSL_PYTEST])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(which=st.integers(0, len(FAILING_LINES) - 1), at=st.integers(0, 10_000), noise=st.integers(0, 30))
def test_a_failing_line_anywhere_never_passes(tmp_path, kind, which, at, noise):
    line, kinds = FAILING_LINES[which]
    if kind not in kinds:
        line = "output: nan"
    lines = VALID[TRITON_PYTEST if kind == PYTEST else kind].splitlines()
    lines = lines[:] + ["[aiter] some noise line"] * noise
    lines.insert(at % (len(lines) + 1), line)
    v, reasons, _ = verdict(tmp_path, "\n".join(lines) + "\n", kind, **WORDS)
    assert v != "PASS", (line, reasons)
