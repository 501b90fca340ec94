"""The inner pytest reader (JUnit XML, terminal summary, ``-rA`` lines) and the FlyDSL parser.

Fixtures are written in the formats pytest and FlyDSL print: JUnit XML
files written in tmp_path, ``-q``/``-rA`` terminal output, and FlyDSL's ``print()`` one-liners.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import FLYDSL_PYTEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.recognizers.pytest_terminal import NO_RESULT, RAN_NO_TEST, junit_nodeid
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput

TEST_FILE = "tests/kernels/test_rmsnorm.py"


def parse(tmp_path: Path, text: str, xml: str | None = None, **ctx) -> ParsedOutput:
    out = tmp_path / "out.txt"
    out.write_text(text, encoding="utf-8")
    if xml is not None:
        ctx["junit_xml"] = tmp_path / "junit.xml"
        ctx["junit_xml"].write_text(xml, encoding="utf-8")
    result = parse_output(FLYDSL_PYTEST, out, ParseContext(**ctx))
    assert not [p for p in result.problems if "parser error" in p], result.problems
    return result


def junit(*cases: str, failures: int = 0, skipped: int = 0, errors: int = 0) -> str:
    tests = len(cases)
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
        f'<testsuite name="pytest" errors="{errors}" failures="{failures}" skipped="{skipped}" tests="{tests}" '
        'time="1.0" timestamp="2026-08-21T00:00:00+00:00" hostname="h">' + "".join(cases) + "</testsuite></testsuites>"
    )


def case(name: str, body: str = "", classname: str = "tests.kernels.test_rmsnorm") -> str:
    return f'<testcase classname="{classname}" name="{name}" time="0.01">{body}</testcase>'


NOT_CLOSE_MESSAGE = (
    "AssertionError: Tensor-likes are not close!&#10;&#10;Mismatched elements: 12 / 4096 (0.3%)&#10;"
    "Greatest absolute difference: 0.0625 at index (3, 17) (up to 0.01 allowed)&#10;"
    "Greatest relative difference: 0.5 at index (3, 17) (up to 0.01 allowed)"
)
FAILURE = f'<failure message="{NOT_CLOSE_MESSAGE}">tests/kernels/test_rmsnorm.py:88: AssertionError</failure>'
SKIP = '<skipped type="pytest.skip" message="aiter not importable">test_rmsnorm.py:12: aiter not importable</skipped>'

QUIET_PASS = f"{TEST_FILE} ..                                          [100%]\n2 passed in 1.23s\n"


# ----- JUnit XML ---------------------------------------------------------------------------


def test_junit_gives_exact_outcomes_and_names_the_failed_test(tmp_path: Path) -> None:
    xml = junit(
        case("test_rmsnorm[bf16]"),
        case("test_rmsnorm[fp16]", FAILURE),
        case("test_x", SKIP),
        case("test_m", classname="tests.kernels.test_rmsnorm.TestK"),
        failures=1,
        skipped=1,
    )
    result = parse(tmp_path, "whatever the terminal said\n", xml)
    c = result.correctness
    assert c.passed is False
    assert (c.shapes_checked, c.checks_passed, c.checks_failed) == (3, 2, 1)
    assert c.max_abs_error == 0.0625
    assert result.failures == [
        "tests/kernels/test_rmsnorm.py::test_rmsnorm[fp16] failed: AssertionError: Tensor-likes are not close!; "
        "Mismatched elements: 12 / 4096 (0.3%); Greatest absolute difference: 0.0625 at index (3, 17) (up to 0.01 allowed)"
    ]
    assert "the inner pytest skipped 1 test(s)" in result.notes


def test_junit_all_passed_passes(tmp_path: Path) -> None:
    xml = junit(case("test_rmsnorm[bf16]"), case("test_rmsnorm[fp16]"))
    result = parse(tmp_path, QUIET_PASS, xml)
    assert result.correctness.passed is True and result.correctness.shapes_checked == 2
    assert result.failures == [] and result.problems == []


def test_junit_error_is_a_failure_with_first_line_of_message(tmp_path: Path) -> None:
    message = "failed on setup with &quot;RuntimeError: HIP error: invalid device function&#10;more&quot;"
    xml = junit(case("test_rmsnorm[bf16]", f'<error message="{message}">trace</error>'), errors=1)
    result = parse(tmp_path, "", xml)
    assert result.correctness.passed is False
    assert result.failures == [
        'tests/kernels/test_rmsnorm.py::test_rmsnorm[bf16] error: failed on setup with "RuntimeError: HIP error: '
        "invalid device function"
    ]


@pytest.mark.parametrize(
    "xml, skipped",
    [
        (junit(failures=0), 0),  # collected nothing (exit code 5, turned into 0 by FlyDSL's conftest)
        (junit(case("test_rmsnorm[bf16]", SKIP), case("test_rmsnorm[fp16]", SKIP), skipped=2), 2),
        # a module that skips itself when ``import aiter`` fails: one skipped "test" named after the module
        (
            junit(
                '<testcase classname="" name="tests.kernels.test_rmsnorm" time="0.000"><skipped message="collection '
                "skipped\">('tests/kernels/test_rmsnorm.py', 14, 'Skipped: aiter')</skipped></testcase>",
                skipped=1,
            ),
            1,
        ),
    ],
)
def test_a_run_that_ran_no_test_is_a_problem_never_a_pass(tmp_path: Path, xml: str, skipped: int) -> None:
    result = parse(tmp_path, "", xml, exit_code=0)
    assert result.correctness.passed is None and result.correctness.shapes_checked == 0
    assert result.problems == [f"{RAN_NO_TEST} ({skipped} skipped)"]
    assert result.failures == []


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "not xml at all",
        '<?xml version="1.0"?><testsuites><testsuite tests="3"><testcase name="a"/><testca',  # truncated
        "\x00\xff<<<>>>&&&",
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><testsuites>&lol2;</testsuites>',
    ],
)
def test_garbage_xml_never_raises_and_the_terminal_is_read_instead(tmp_path: Path, garbage: str) -> None:
    result = parse(tmp_path, QUIET_PASS, garbage)
    assert result.correctness.passed is True and result.correctness.shapes_checked == 2
    assert any(n.startswith("JUnit XML junit.xml not used: ") for n in result.notes), result.notes


def test_garbage_xml_and_no_terminal_summary_is_no_result(tmp_path: Path) -> None:
    result = parse(tmp_path, "Segmentation fault (core dumped)\n", "<testsuites><testsuite")
    assert result.correctness.passed is None
    assert result.problems == ["line 1: the run printed an error: Segmentation fault (core dumped)", NO_RESULT]


def test_junit_nodeid() -> None:
    assert junit_nodeid("tests.kernels.test_x", "test_y[bf16]") == "tests/kernels/test_x.py::test_y[bf16]"
    assert junit_nodeid("tests.kernels.test_x.TestK", "test_m") == "tests/kernels/test_x.py::TestK::test_m"
    assert junit_nodeid("", "tests.kernels.test_s") == "tests.kernels.test_s"


def test_terminal_summary_contradicting_the_xml_fails(tmp_path: Path) -> None:
    xml = junit(case("test_rmsnorm[bf16]"))
    result = parse(tmp_path, "==== 1 failed, 1 passed in 0.5s ====\n", xml)
    assert result.correctness.passed is False
    assert result.failures == ["line 1: the pytest summary reports 1 passed, 1 failed; the JUnit XML no failure"]


# ----- the terminal, when there is no XML ---------------------------------------------------


@pytest.mark.parametrize(
    "summary, passed, shapes",
    [
        ("3 passed in 0.52s", True, 3),
        ("==================== 3 passed, 1 skipped, 2 warnings in 2.10s ====================", True, 3),
        ("\x1b[32m==== \x1b[32m\x1b[1m2 passed\x1b[0m\x1b[32m in 62.13s (0:01:02)\x1b[0m\x1b[32m ====\x1b[0m", True, 2),
        ("1 failed, 2 passed in 0.50s", False, 3),
        ("=== 2 passed, 1 error in 0.9s ===", False, 2),
        ("=================== 4 skipped in 0.11s ===================", None, 0),
        ("no tests ran in 0.01s", None, 0),
        ("============================ no tests ran in 0.55s =============================", None, 0),
        ("=== 5 deselected in 0.20s ===", None, 0),
    ],
)
def test_summary_line_without_xml(tmp_path: Path, summary: str, passed: bool | None, shapes: int) -> None:
    result = parse(tmp_path, f"{TEST_FILE} ...\n{summary}\n", junit_problem="not written")
    assert result.correctness.passed is passed, (result.failures, result.problems)
    assert result.correctness.shapes_checked == shapes
    if passed is None:
        assert [p for p in result.problems if p.startswith(RAN_NO_TEST)], result.problems
    if passed is False:
        assert result.failures
    assert "no JUnit XML: not written" in result.notes


RA_OUTPUT = f"""\
{TEST_FILE} .F.s                                       [100%]

=================================== FAILURES ===================================
______________________________ test_rmsnorm[fp16] ______________________________
tests/kernels/test_rmsnorm.py:88: in test_rmsnorm
    cos_sim = 0.999
    torch.testing.assert_close(out, ref, atol=1e-2, rtol=1e-2)
E   AssertionError: Tensor-likes are not close!
E   
E   Mismatched elements: 12 / 4096 (0.3%)
E   Greatest absolute difference: 0.0625 at index (3, 17) (up to 0.01 allowed)
E   Greatest relative difference: 0.5 at index (3, 17) (up to 0.01 allowed)
----------------------------- Captured stdout call -----------------------------
Testing RMSNorm (M=64, N=256, dtype=fp16)
Kernel avg time: 0.0123 ms via run_perftest (warmup=3, iters=20)
Bandwidth: 1.33 GB/s
==================================== PASSES ====================================
______________________________ test_rmsnorm[bf16] ______________________________
----------------------------- Captured stdout call -----------------------------
Testing RMSNorm (M=64, N=256, dtype=bf16)
Kernel avg time: 0.0456 ms via run_perftest (warmup=3, iters=20)
Bandwidth: 2510.12 GB/s
Bandwidth: 12.00 GB/s
Max absolute error: 1.95e-03 (atol=0.01)
PASSED
=========================== short test summary info ============================
PASSED {TEST_FILE}::test_rmsnorm[bf16]
PASSED {TEST_FILE}::TestK::test_m
SKIPPED [1] {TEST_FILE}:20: CDNA only
FAILED {TEST_FILE}::test_rmsnorm[fp16] - AssertionError: Tensor-likes a...
1 failed, 2 passed, 1 skipped in 3.21s
"""


def test_ra_output_names_the_failure_and_keeps_the_perf_rows(tmp_path: Path) -> None:
    result = parse(tmp_path, RA_OUTPUT)
    c = result.correctness
    # the tests' outcomes, and the ``PASSED`` test_rmsnorm[bf16] printed: a check inside it (printout.py)
    assert c.passed is False and (c.shapes_checked, c.checks_passed, c.checks_failed) == (3, 3, 1)
    assert c.max_abs_error == 0.0625 and c.atol == 0.01
    assert c.cosine_sim is None  # ``cos_sim = 0.999`` in the traceback is source code, not a result
    assert result.failures == [
        f"{TEST_FILE}::test_rmsnorm[fp16] failed: AssertionError: Tensor-likes are not close!; Mismatched elements: "
        "12 / 4096 (0.3%); Greatest absolute difference: 0.0625 at index (3, 17) (up to 0.01 allowed)"
    ]
    assert [(r.shape, r.name, r.us_median, r.stat, r.metrics) for r in result.perf] == [
        (
            "test_rmsnorm[fp16]: RMSNorm (M=64, N=256, dtype=fp16)",
            "Kernel avg time",
            None,
            "mean",
            {"mean_us": 12.3, "GB/s": 1.33},
        ),
        (
            "test_rmsnorm[bf16]: RMSNorm (M=64, N=256, dtype=bf16)",
            "Kernel avg time",
            None,
            "mean",
            {"mean_us": 45.6, "GB/s": 2510.12},
        ),
    ]
    assert any("only the first is kept" in n for n in result.notes)  # issue #655


def test_short_summary_without_summary_line_is_read_but_a_problem(tmp_path: Path) -> None:
    text = f"PASSED {TEST_FILE}::test_a[1]\nPASSED {TEST_FILE}::test_a[2]\nFAILED {TEST_FILE}::test_b - assert 1 == 2\n"
    result = parse(tmp_path, text)
    assert result.correctness.passed is False and result.correctness.shapes_checked == 3
    assert result.failures == [f"{TEST_FILE}::test_b failed: assert 1 == 2"]
    assert result.problems == ["no pytest summary line (output cut short?); outcomes read from the short summary"]


def test_verbose_outcome_lines_are_read(tmp_path: Path) -> None:
    text = f"{TEST_FILE}::test_a[1] PASSED                               [ 50%]\n{TEST_FILE}::test_a[2] SKIPPED (x) [100%]\n"
    result = parse(tmp_path, text)
    assert result.correctness.passed is True and result.correctness.shapes_checked == 1


def test_failed_count_without_names_still_fails(tmp_path: Path) -> None:
    result = parse(tmp_path, "=== 2 failed, 3 passed in 1.0s ===\n")
    assert result.correctness.passed is False
    assert result.failures == ["the inner pytest reports 3 passed, 2 failed; 2 not named"]


def test_output_with_no_pytest_result(tmp_path: Path) -> None:
    result = parse(tmp_path, "ImportError: libamdhip64.so: cannot open shared object file\n")
    assert result.correctness.passed is None and result.problems == [
        "line 1: the run printed an error: ImportError: libamdhip64.so: cannot open shared object file",
        NO_RESULT,
    ]


# ----- FlyDSL perf lines ---------------------------------------------------------------------

GEMM_SECTION = """\
==================================== PASSES ====================================
___________________________ test_gemm[64-256-128] ____________________________
----------------------------- Captured stdout call -----------------------------
================================================================================
[flyc] MFMA FP8 GEMM Test (Tile: 64x256x128)
================================================================================
\u2713 Kernel prepared (tile 64x256x128)
[flyc] Throughput: 12.3 us, 45.67 TFLOPS, BW: 1.234 TB/s
[flyc] W4A6 Throughput: 10.5 us, 53.50 TFLOPS, BW: 1.446 TB/s
Aiter Throughput: 14.1 us, 39.80 TFLOPS, BW: 1076.22 GB/s
Logits Diff: 0.000012, Max Diff: 0.003906, Mean Diff: 0.000101
gemm \u2713 Check passed
FlyDSL MoE stage1[fp8]: 84.3 us, 18.80 TFLOPS(logical, M=128), 1.250 TB/s
FlyDSL MoE stage2 [mxfp_moe] fp4 atomic | 7168x256, E=256, K=8, M_eff=1024 | 50.1 us, 30.20 TFLOPS, 2.100 TB/s
cos=0.99998 | t128-d7168x256-e256k8 |
[Perf] FlyDSL rmsnorm gpu: 18.2 us
  aiter_asm: cos_diff=1.20e-05  TFLOPS=123.45  TB/s=4.56
b=1 s=128 | PASS | 1.23e-02  0.99999 |      123.4     456.7

====================================================================================================
Perf Compare (gpu us): FlyDSL vs AIter
====================================================================================================
op         shape              dtype  FlyDSL(gpu us)  AIter(gpu us)    speedup
wmma_gemm  4096x4096x4096     bf16          1,264.1        1,119.7      1.13x
fp8_gemm   32x8192x8192       fp8              68.9              -          -
====================================================================================================

=========================== short test summary info ============================
PASSED tests/kernels/test_gemm.py::test_gemm[64-256-128]
============================== 1 passed in 9.80s ===============================
"""


def test_flydsl_one_liners_and_perf_compare_table(tmp_path: Path) -> None:
    result = parse(tmp_path, GEMM_SECTION)
    assert result.failures == [] and result.problems == []
    c = result.correctness
    assert c.passed is True and c.checks_passed == 3  # 1 test + "Check passed" + the PASS row
    assert (c.cosine_sim, c.logits_diff, c.max_abs_error) == (0.99998, 1.2e-05, 0.01230)
    rows = [(r.shape, r.name, r.us_median, r.metrics) for r in result.perf]
    test = "test_gemm[64-256-128]"
    assert rows == [
        (test, "flyc", 12.3, {"TFLOPS": 45.67, "TB/s": 1.234}),
        (test, "flyc W4A6", 10.5, {"TFLOPS": 53.5, "TB/s": 1.446}),
        (test, "Aiter", 14.1, {"TFLOPS": 39.8, "GB/s": 1076.22}),
        (test, "FlyDSL MoE stage1[fp8]", 84.3, {"TFLOPS": 18.8, "TB/s": 1.25}),
        (
            "7168x256, E=256, K=8, M_eff=1024",
            "FlyDSL MoE stage2 [mxfp_moe] fp4 atomic",
            50.1,
            {"TFLOPS": 30.2, "TB/s": 2.1},
        ),
        (test, "FlyDSL rmsnorm gpu", 18.2, {}),
        (test, "aiter_asm", None, {"TFLOPS": 123.45, "TB/s": 4.56}),
        ("b=1 s=128", "time_us", 123.4, {"TFLOPS": 456.7}),
        ("op=wmma_gemm, shape=4096x4096x4096, dtype=bf16", "FlyDSL(gpu us)", 1264.1, {"speedup": 1.13}),
        ("op=wmma_gemm, shape=4096x4096x4096, dtype=bf16", "AIter(gpu us)", 1119.7, {"speedup": 1.13}),
        ("op=fp8_gemm, shape=32x8192x8192, dtype=fp8", "FlyDSL(gpu us)", 68.9, {}),
    ]


def test_check_failed_and_printed_failed_lines_fail_a_passing_pytest(tmp_path: Path) -> None:
    text = (
        "Logits Diff: 0.012000, Max Diff: 0.500000, Mean Diff: 0.010000\n"
        "\u2717 Check failed: logits_diff 0.012 > 0.002\n"
        "FAILED\n"
        "2 TESTS FAILED\n"
        "b=1 s=128 | FAIL | 5.00e-01  0.91000 |      123.4     456.7\n"
        "1 passed in 0.3s\n"
    )
    result = parse(tmp_path, text)
    assert result.correctness.passed is False
    assert result.failures == [
        "line 2: a failure verdict line (check-mark): \u2717 Check failed: logits_diff 0.012 > 0.002",
        "line 3: a failure verdict line (word-alone): FAILED",
        "line 4: a failure verdict line (tests-summary): 2 TESTS FAILED",
        "line 5: FAIL (b=1 s=128)",
    ]
    assert result.correctness.logits_diff == 0.012 and result.correctness.cosine_sim == 0.91


def test_nan_timing_is_a_failure(tmp_path: Path) -> None:
    result = parse(tmp_path, "[flyc] Throughput: nan us, nan TFLOPS, BW: nan TB/s\n1 passed in 0.1s\n")
    assert result.correctness.passed is False and result.correctness.nan_count == 1
    assert result.failures == ["line 1: nan in 'flyc' timing"]


def test_perf_lines_with_no_pytest_outcome_are_kept_but_prove_nothing(tmp_path: Path) -> None:
    result = parse(tmp_path, "Testing RMSNorm (M=1, N=8, dtype=bf16)\nKernel avg time: 0.0030 ms via run_perftest\n")
    assert result.correctness.passed is None and result.problems == [NO_RESULT]
    assert [(r.shape, r.metrics["mean_us"]) for r in result.perf] == [("RMSNorm (M=1, N=8, dtype=bf16)", 3.0)]
