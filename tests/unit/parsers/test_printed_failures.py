"""A failure printed in any spelling, anywhere, outranks every passing figure; crash texts are alarms;
the exit status never outvotes the printout; real passes in harness spellings are read as passes.
Each family is written with the lines users met and variants of them, in the script kinds (a passing
check line before each, so a missed failure would read PASS), with the prefilter on (each engine)
and off, which must agree."""

from __future__ import annotations

from functools import partial

import pytest
from parse_cases import read_agreeing, verdict_of

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, PYTEST_KINDS
from pytest_gpuverify.parsers.result import ParsedOutput

SCRIPT_KINDS = (AITER_OP_TEST, BENCH)
PASSED = "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]"


pytestmark = pytest.mark.usefixtures("engine")


read = partial(read_agreeing, noise=(3, 12))
verdict = verdict_of


# ----- failures in any spelling, after one passing check line -------------------------------------

FAILURES = {
    "a shape's status": [
        "M=256 N=4096: FAIL",
        "M=64, K=128: failed",
        "gemm bf16 4096x4096 -> FAILED",
        "shape (3, 7): FAIL!",
    ],
    "a bracketed status": ["[FAIL] gemm M=128", "[ FAILED ] attention causal=True", "(FAIL) rmsnorm N=8192"],
    "a table cell": ["| 128 | 4096 | FAIL |", "| gemm | bf16 | FAILED | 3.2 |"],
    "a status value": ["status: FAIL", "result = FAILED", "Check -> FAIL", "verdict: failed"],
    "a count of failures": ["PASS: 3, FAIL: 1", "3 TESTS FAILED", "Failures: 2 of 40", "passed 10, failed=1"],
    "a bare False": ["False", "tensor(False)", "tensor(False, device='cuda:0')", "  False  "],
    "a check's boolean": [
        "match: False",
        "correct: False",
        "passed=False",
        "allclose = tensor(False, device='cuda:0')",
        "torch.allclose(out, ref): False",
        "outputs_match: False",
        "is_close False",
    ],
    "a failure phrase": [
        "Results differ!",
        "Outputs do not match",
        "Mismatch found at index 12",
        "NaN detected in output",
        "output is incorrect",
        "MISMATCH",
        "Triton and Torch differ",
        "results don't match the reference",
        "wrong results for M=128",
    ],
    "a fail mark": ["❌ M=256", "最大误差: 0.008380 ❌", "✗ rmsnorm", "rmsnorm N=1024 ✘"],
    "TAP": ["not ok 3 - gemm", "not ok 12 attention fwd"],
    "real harnesses": [
        "Error: Incorrect results!",
        "[2024-01-02 10:00:00] FAILED: 0.0630636",
        "FAILED: gpu",
        "Mismatch at 24: 1674 != 1446",
        "Backward Convolution Weights Failed: 0.993599",
        "Verification FAILED",
        "numerics check failed",
    ],
}


@pytest.mark.parametrize("kind", SCRIPT_KINDS)
@pytest.mark.parametrize("line", [line for lines in FAILURES.values() for line in lines])
def test_a_printed_failure_after_a_passing_check_fails(kind: str, line: str) -> None:
    parsed = read(f"{PASSED}\n{line}\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "FAIL", (line, reasons, parsed.problems)


@pytest.mark.parametrize(
    "line",
    [
        "M=128: cosine_sim=0.9999, allclose=False",
        "cosine_sim=0.9999 Mismatched elements: 12 / 1024",
        "[checkAllclose atol=0.01 rtol=0.01 passed~] triton: Tensor-likes are not close!",
        "✅ M=128 cosine_sim=0.99991 status: FAIL",
        "| 128 | 0.99999 | PASS | mismatch: 3 |",
    ],
)
@pytest.mark.parametrize("kind", SCRIPT_KINDS)
def test_a_passing_reading_never_hides_a_failure_on_its_line(kind: str, line: str) -> None:
    parsed = read(line + "\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "FAIL", (line, reasons)


@pytest.mark.parametrize("kind", PYTEST_KINDS)
@pytest.mark.parametrize("line", ["status: FAIL", "tensor(False)", "Results differ!", "❌ M=256"])
def test_a_failure_a_passing_test_printed_fails_the_inner_pytest(kind: str, line: str) -> None:
    text = (
        "tests/test_k.py .                                                        [100%]\n"
        "==================================== PASSES ====================================\n"
        "__________________________________ test_k ___________________________________\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        f"{line}\n"
        "=========================== short test summary info ============================\n"
        "PASSED tests/test_k.py::test_k\n1 passed in 1.10s\n"
    )
    assert verdict(read(text, kind), kind)[0] == "FAIL", line


# ----- what is no failure -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "0 failed",
        "failed: 0",
        "FAIL: 0",
        "PASS: 3, FAIL: 0",
        "no mismatches",
        "Mismatched elements: 0 / 4096 (0.0%)",
        "0 mismatches",
        "mismatch ratio: 0.0",
        "[aiter] type hints mismatch, override to --> wvSpltK(arg0: int)",
        "causal=False",
        "use_fp8: False",
        "return_lse = False",
        "results may differ slightly across GPUs",
        "[aiter] failed to import triton kernels, using the ck ones",
        "if any check fails, rerun with --verbose",
        "True",
        "does not match the expected type annotation",
        "tensor(True)",
    ],
)
@pytest.mark.parametrize("kind", SCRIPT_KINDS)
def test_look_alikes_of_a_failure_leave_a_passing_check_passing(kind: str, line: str) -> None:
    parsed = read(f"{PASSED}\n{line}\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "PASS", (line, reasons, parsed.problems)


@pytest.mark.parametrize(
    "line",
    [
        "True",
        "tensor(True)",
        "✓ Kernel prepared (tile 64x256x128)",
        "status: ok",
        "Successfully preprocessed all matching files.",
    ],
)
def test_a_pass_needs_a_subject(line: str) -> None:
    """A bare True proves nothing (it may be print(torch.cuda.is_available())); a failure needs none."""
    assert verdict(read(line + "\n"))[0] == "INCONCLUSIVE", line


# ----- crash texts are alarms -------------------------------------------------------------------------

CRASHES = [
    ":0:rocdevice.cpp:2880: 1234 us: aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent "
    "attempted to access memory beyond the largest legal address. code: 0x29",
    "Killed",
    "bash: line 1: 4242 Killed                  python3 bench.py",
    "Bus error (core dumped)",
    "Floating point exception",
    "double free or corruption (!prev)",
    "free(): invalid pointer",
    "*** stack smashing detected ***: terminated",
    "terminate called after throwing an instance of 'c10::Error'",
    "GPU core dump created: gpucore.4242",
    "caught: HIP out of memory. Tried to allocate 2.00 GiB",
    "caught: CUDA out of memory. Tried to allocate 20.00 MiB",
    "Illegal instruction (core dumped)",
    "the worker was killed by signal 9",
]


@pytest.mark.parametrize("kind", SCRIPT_KINDS)
@pytest.mark.parametrize("line", CRASHES)
def test_a_crash_text_in_a_run_that_exits_0_is_an_alarm(kind: str, line: str) -> None:
    parsed = read(f"{PASSED}\n{line}\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "INCONCLUSIVE", (line, reasons)
    assert any(line.strip()[:40] in r for r in reasons), reasons


# ----- the exit status never outvotes the printout -------------------------------------------------


def test_a_printed_mismatch_is_a_failure_whatever_the_declared_exit_status_check_says() -> None:
    text = "N=4096: max_abs_error=0.973322\nMISMATCH between triton and torch for N=4096\n"
    parsed = read(text, exit_status_is_check=True, exit_code=0)
    v, reasons = verdict(parsed)
    assert v == "FAIL", reasons
    assert any("not counted" in n for n in parsed.notes) and parsed.correctness.checks_passed == 0


def test_an_unattached_failed_word_keeps_the_exit_status_from_passing() -> None:
    parsed = read("autotuning failed for config 3, retrying\n", exit_status_is_check=True, exit_code=0)
    assert verdict(parsed)[0] == "INCONCLUSIVE" and parsed.correctness.checks_passed == 0


def test_the_exit_status_adds_a_check_but_no_second_shape() -> None:
    """A clean output checked one shape: the declared exit status adds a check, not a shape."""
    clean = "N=4096: cosine_sim=0.99999\n"
    parsed = read(clean, exit_status_is_check=True, exit_code=0)
    c = parsed.correctness
    assert verdict(parsed)[0] == "PASS" and (c.shapes_checked, c.checks_passed) == (1, 2)
    from pytest_gpuverify.config.targets import Thresholds

    limited = read(clean, thresholds=Thresholds(cosine_sim_min=0.999))
    assert limited.correctness.shapes_checked == 1


# ----- real passes in harness spellings ----------------------------------------------------------------

PASSES = [
    "Running test_gemm ... PASSED (12 passed)",
    "| M | N | Correctness |\n|---|---|---|\n| 128 | 4096 | PASS |\n| 256 | 4096 | PASS |",
    "              x_val    triton-accuracy    torch-accuracy\n-------------------  -----------------  ----------------\n"
    "(1024, 1024)                       1                 1\n(2048, 2048)                       1                 1",
    "[==========] Running 54255 tests from 12 test suites.\n[==========] 54255 tests from 12 test suites ran. "
    "(915284 ms total)\n[  PASSED  ] 54255 tests.",
    "[ RUN      ] GemmTest.Fp16\n[       OK ] GemmTest.Fp16 (12 ms)\n[  PASSED  ] 1 test.",
    "ok 1 - gemm bf16\nok 2 - gemm fp16\n1..2",
    "Forward Convolution Verifies OK on GPU reference (0.00023697 < 0.0082)",
    "Backward Convolution Data Verifies on CPU and GPU (1.35201e-07)",
    "The maximum difference between torch and triton is 0.0",
    "✅ Triton and Torch match",
]


@pytest.mark.parametrize("kind", SCRIPT_KINDS)
@pytest.mark.parametrize("text", PASSES)
def test_a_real_pass_in_a_harness_spelling_passes(kind: str, text: str) -> None:
    parsed = read(text + "\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "PASS", (text, reasons, parsed.problems)
    assert parsed.correctness.shapes_checked >= 1


def test_a_table_cell_and_a_gtest_test_fail_where_they_fail() -> None:
    table = "| M | N | Correctness |\n|---|---|---|\n| 128 | 4096 | PASS |\n| 256 | 4096 | FAIL |\n"
    parsed = read(table)
    assert verdict(parsed)[0] == "FAIL" and parsed.correctness.checks_failed == 1
    assert any("column 'Correctness' says FAIL (M=256, N=4096)" in f for f in parsed.failures), parsed.failures
    gtest = (
        "[ RUN      ] GemmTest.Fp16\n[  FAILED  ] GemmTest.Fp16 (12 ms)\n[  FAILED  ] 1 test, listed below:\n"
        "[  FAILED  ] GemmTest.Fp16\n"
    )
    parsed = read(gtest)
    assert verdict(parsed)[0] == "FAIL" and parsed.failures == [
        f"line {gtest_line(parsed)}: googletest GemmTest.Fp16 failed"
    ]


def gtest_line(parsed: ParsedOutput) -> int:
    return int(parsed.failures[0].split()[1].rstrip(":"))


def test_a_validation_cell_of_failed_fails_every_row_it_is_in() -> None:
    csv = (
        "run,problem-sizes,solution,validation,time-us,gflops\n"
        '0,"(1024,1024,1)",Cijk_MT64x64,PASSED,12.5,171.8\n'
        '1,"(2048,2048,1)",Cijk_MT128x64,FAILED,40.1,428.4\n'
    )
    parsed = read(csv)
    assert verdict(parsed)[0] == "FAIL" and parsed.correctness.checks_failed == 1
    assert {r.us_median for r in parsed.perf} == {12.5, 40.1}
