"""Every word of the printout, whatever the kind (parsers/printout.py and what it changed around it):
the verdict lines harnesses print, one alarm scan for every kind, retries, runs that ran no test,
perf_report tables, assert-only harnesses. Each output is read with the prefilter on (each engine)
and off, which must agree; the outputs are written in the styles real harnesses print."""

from __future__ import annotations

from pathlib import Path

import pytest
from parse_cases import NOISE, read_agreeing, verdict_of

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, PYTEST, PYTEST_KINDS, TRITON_PYTEST
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

SCRIPT_KINDS = (AITER_OP_TEST, BENCH)
PASSED = "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]"


pytestmark = pytest.mark.usefixtures("engine")


def read(text: str, kind: str = BENCH, noise: bool = True, **context) -> ParsedOutput:
    """Parse with the prefilter (the output between runs of noise) and without; both must agree."""
    return read_agreeing(text, kind, noise=(5, 30) if noise else None, **context)


verdict = verdict_of


def pytest_run(captured: str = "", extra_sections: str = "", summary: str = "2 passed in 1.10s") -> str:
    """An inner pytest run (-q -rA) whose two tests pass, a test's captured output, more sections."""
    return (
        "tests/test_k.py ..                                                       [100%]\n"
        + extra_sections
        + "==================================== PASSES ====================================\n"
        "__________________________________ test_k[1] ___________________________________\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        + captured
        + "=========================== short test summary info ============================\n"
        "PASSED tests/test_k.py::test_k[1]\nPASSED tests/test_k.py::test_k[2]\n" + summary + "\n"
    )


# ----- 1. the verdict lines of common harnesses, on by default, for every kind ---------------------

HARNESS_LINES = [  # (line, passes): what kernel repos' and serving engines' harnesses print
    ("✅ Triton and Torch match", True),
    ("❌ Triton and Torch differ", False),
    ("✅ All implementations match", True),
    ("❌ Some implementations differ", False),
    ("Correctness test passed!", True),
    ("✓ PASSED max_abs_diff=0.0012", True),
    ("✗ FAILURE: Outputs or configs differ!", False),
    ("Allclose(atol=0.1, rtol=0.2): False", False),
    ("torch.allclose: True", True),
    ("Result: FAIL", False),
    ("  --> PASS", True),
    ("FAILED", False),
    ("Some tests FAILED.", False),
    ("3 TESTS FAILED", False),
    ("[FAIL] M=128 N=4096 cos_sim=0.9421", False),
    ("Accuracy: OK", True),
]


@pytest.mark.parametrize("kind", SCRIPT_KINDS)
@pytest.mark.parametrize("line, passes", HARNESS_LINES)
def test_a_harness_verdict_line_alone_is_read_without_a_declaration(kind: str, line: str, passes: bool) -> None:
    parsed = read(NOISE[0] + "\n" + line + "\n", kind, noise=False)
    v, reasons = verdict(parsed, kind)
    assert v == ("PASS" if passes else "FAIL"), (line, reasons, parsed.problems)
    assert parsed.correctness.shapes_checked == 1
    if not passes:
        assert any(r.startswith("line 2: ") for r in reasons), reasons


@pytest.mark.parametrize("kind", PYTEST_KINDS)
@pytest.mark.parametrize("line", [line for line, passes in HARNESS_LINES if not passes])
def test_a_failure_verdict_line_in_a_passing_tests_output_fails(kind: str, line: str) -> None:
    parsed = read(pytest_run(line + "\n"), kind)
    assert verdict(parsed, kind)[0] == "FAIL", (line, parsed.failures, parsed.problems)


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_a_pass_line_in_a_test_is_no_check_of_its_own(kind: str) -> None:
    parsed = read(pytest_run("✅ Triton and Torch match\nPASSED\n"), kind)
    assert verdict(parsed, kind)[0] == "PASS"
    assert parsed.correctness.shapes_checked == 2  # the two tests: a test's printed pass is part of it


def test_the_documented_example_of_each_verdict_line_is_read() -> None:
    from pytest_gpuverify.parsers.reading.statements import FAMILIES as VERDICT_LINES

    readme = (Path(__file__).resolve().parents[3] / "docs" / "artifacts.md").read_text()
    table = readme.split("| name | reads | passes | fails |", 1)[1].split("\n\n", 1)[0].splitlines()
    for entry in VERDICT_LINES:
        row = next((line for line in table if line.startswith(f"| `{entry.name}` |")), "")
        assert f"`{entry.fails}`" in row and (entry.passes is None or f"`{entry.passes}`" in row), entry.name
        if entry.passes is not None:
            assert verdict(read(entry.passes + "\n"))[0] == "PASS", entry.name
        assert verdict(read(entry.fails + "\n"))[0] == "FAIL", entry.name


@pytest.mark.parametrize(
    "line",
    [
        "✓ Kernel prepared (tile 64x256x128)",  # a mark without a verdict word
        "0 tests failed",
        "correctness check failed to run: no reference",  # "failed to": not a verdict; no check either
        "bypassed the cache",
        "The check failed to load its reference",
    ],
)
def test_look_alikes_are_no_passing_verdict(line: str) -> None:
    assert verdict(read(line + "\n"))[0] != "PASS", line


def test_a_printed_failure_outranks_a_passing_figure() -> None:
    """A fused-MoE comparison harness: the cosine passes the default 0.99, the allclose fails."""
    text = "Cosine similarity: 0.999060\nAllclose(atol=0.1, rtol=0.2): False\n"
    for kind in SCRIPT_KINDS:
        parsed = read(text, kind)
        v, reasons = verdict(parsed, kind)
        assert v == "FAIL" and parsed.correctness.cosine_sim == 0.99906, reasons
        assert any("Allclose(atol=0.1, rtol=0.2): False" in r for r in reasons), reasons


def test_a_declaration_adds_its_own_line_and_turns_one_off() -> None:
    ok = "[bench] numerics look right\n"
    assert verdict(read(ok))[0] == "INCONCLUSIVE"
    assert verdict(read(ok, pass_pattern=r"numerics look right"))[0] == "PASS"
    assert verdict(read("FAILED\n"))[0] == "FAIL"
    parsed = read("FAILED\n", verdict_lines_off=("word-alone",))
    assert verdict(parsed)[0] == "INCONCLUSIVE"  # not a failure line now, and still no pass
    assert any("'failed' printed where no check was read" in p for p in parsed.problems), parsed.problems


# ----- 2. one alarm scan for every kind, after the kind's own parser ------------------------------

CLOSE_BLOCK = """\
Tensor-likes are not close!

Mismatched elements: 1024 / 1024 (100.0%)
Greatest absolute difference: 0.5 at index (3, 17) (up to 1e-05 allowed)
Greatest relative difference: 1.0 at index (3, 17) (up to 1.3e-06 allowed)
"""


@pytest.mark.parametrize("kind", SCRIPT_KINDS)
def test_a_caught_assert_close_error_printed_after_a_passed_check_fails(kind: str) -> None:
    parsed = read(f"{PASSED}\n{CLOSE_BLOCK}", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "FAIL", (reasons, parsed.problems)
    assert any("Tensor-likes are not close!" in r and "Mismatched elements: 1024 / 1024 (100.0%)" in r for r in reasons)
    assert parsed.correctness.max_abs_error == 0.5


@pytest.mark.parametrize("kind", [*SCRIPT_KINDS, *PYTEST_KINDS])
def test_mismatched_elements_alone_fails_and_none_mismatched_does_not(kind: str) -> None:
    base = f"{PASSED}\n" if kind in SCRIPT_KINDS else ""
    wrap = (lambda t: base + t) if kind in SCRIPT_KINDS else pytest_run
    assert verdict(read(wrap("Mismatched elements: 12 / 4096 (0.3%)\n"), kind), kind)[0] == "FAIL"
    assert verdict(read(wrap("Mismatched elements: 0 / 4096 (0.0%)\n"), kind), kind)[0] == "PASS"


# pytest 9's own output for an assert_close error raised in a worker thread: the test passes, exit 0
THREAD_WARNING = """\
=============================== warnings summary ===============================
tests/test_k.py::test_k[1]
  /usr/lib/python3/site-packages/_pytest/threadexception.py:58: PytestUnhandledThreadExceptionWarning: Exception in thread Thread-1 (work)

  Traceback (most recent call last):
    File "/usr/lib/python3.12/threading.py", line 1073, in _bootstrap_inner
      self.run()
    File "/workspace/kk/tests/test_k.py", line 9, in work
      raise AssertionError("Tensor-likes are not close!\\n\\nMismatched elements: 1024 / 1024 (100.0%)")
  AssertionError: Tensor-likes are not close!

  Mismatched elements: 1024 / 1024 (100.0%)
  Greatest absolute difference: 1.0 at index (0,) (up to 1e-05 allowed)
  Greatest relative difference: 1.0 at index (0,) (up to 1.3e-06 allowed)

  Enable tracemalloc to get traceback where the object was allocated.
    warnings.warn(pytest.PytestUnhandledThreadExceptionWarning(msg))

tests/test_k.py::test_k[2]
  /workspace/kk/tests/test_k.py:12: DeprecationWarning: error_handler() failed: use on_error; Error: x
    warnings.warn(DeprecationWarning("error_handler() failed: use on_error; Error: x"))

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
"""
UNRAISABLE = """\
=============================== warnings summary ===============================
tests/test_k.py::test_k[2]
  /usr/lib/python3/site-packages/_pytest/unraisableexception.py:67: PytestUnraisableExceptionWarning: Exception ignored in: <f>

  Traceback (most recent call last):
    File "/workspace/kk/tests/test_k.py", line 20, in __del__
  RuntimeError: HIP error: an illegal memory access was encountered

    warnings.warn(pytest.PytestUnraisableExceptionWarning(msg))

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
"""
CHILD_TRACEBACK = """\
Traceback (most recent call last):
  File "<string>", line 1, in <module>
RuntimeError: HIP error: invalid device function
"""


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_an_assert_close_error_in_a_worker_thread_fails_a_passing_pytest_run(kind: str) -> None:
    parsed = read(pytest_run(extra_sections=THREAD_WARNING), kind)
    v, reasons = verdict(parsed, kind)
    assert v == "FAIL", (reasons, parsed.problems)
    assert len([r for r in reasons if "assert_close failed" in r]) == 1, (
        reasons
    )  # the block, once (not its source line)
    assert any("PytestUnhandledThreadExceptionWarning" in r for r in reasons), reasons
    # the other warning's words are its own: no alarm for them
    assert not any("error_handler" in r for r in reasons), reasons


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_an_unraisable_exception_and_a_childs_traceback_make_a_passing_pytest_run_inconclusive(kind: str) -> None:
    parsed = read(pytest_run(extra_sections=UNRAISABLE), kind)
    v, reasons = verdict(parsed, kind)
    assert v == "INCONCLUSIVE" and any("PytestUnraisableExceptionWarning" in r for r in reasons), reasons
    parsed = read(pytest_run(CHILD_TRACEBACK), kind)
    v, reasons = verdict(parsed, kind)
    assert v == "INCONCLUSIVE", reasons
    assert any("RuntimeError: HIP error: invalid device function" in r for r in reasons), reasons


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_a_failed_tests_own_traceback_is_its_failure_not_an_alarm(kind: str) -> None:
    text = """\
tests/test_k.py F.                                                       [100%]
=================================== FAILURES ===================================
__________________________________ test_k[1] ___________________________________
    def test_k(n):
>       run_kernel(n)
E       RuntimeError: HIP error: an illegal memory access was encountered
----------------------------- Captured stderr call -----------------------------
Traceback (most recent call last):
Memory access fault by GPU node-2 (Agent handle: 0x55d0) on address 0x7f00. Reason: Unknown.
=========================== short test summary info ============================
FAILED tests/test_k.py::test_k[1] - RuntimeError: HIP error: an illegal memory access was encountered
PASSED tests/test_k.py::test_k[2]
1 failed, 1 passed in 1.10s
"""
    parsed = read(text, kind)
    v, reasons = verdict(parsed, kind, exit_code=1)
    assert v == "FAIL" and not parsed.problems, parsed.problems
    assert parsed.failures == [
        "tests/test_k.py::test_k[1] failed: RuntimeError: HIP error: an illegal memory access was encountered"
    ]


# ----- 3. Triton perf_report tables ------------------------------------------------------------------

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "triton"

TWO_TABLES = """\
matmul-performance-fp16:
         M       N       K      cuBLAS      Triton
0    256.0   256.0   256.0    4.096000    4.096000
1    384.0   384.0   384.0   12.288000   12.288000
matmul-performance-fp8:
         M       N       K      Triton
0    256.0   256.0   256.0    3.276800
1    384.0   384.0   384.0    9.830400
"""


def test_a_whole_number_in_a_kernel_column_stays_the_kernels_figure() -> None:
    text = """\
vector-add-performance:
           size       Triton        Torch
0        4096.0  1024.000000     8.000000
1        8192.0    16.000000  1024.000000
"""
    parsed = read(text, noise=False)
    got = [(r.table, r.shape, r.name, r.metrics) for r in parsed.perf]
    assert got == [
        ("vector-add-performance", "size=4096.0", "Triton", {"Triton": 1024.0}),
        ("vector-add-performance", "size=4096.0", "Torch", {"Torch": 8.0}),
        ("vector-add-performance", "size=8192.0", "Triton", {"Triton": 16.0}),
        ("vector-add-performance", "size=8192.0", "Torch", {"Torch": 1024.0}),
    ]


def test_two_tables_of_one_run_never_share_a_key() -> None:
    parsed = read(TWO_TABLES, noise=False)
    keys = [(r.table, r.shape, r.name, r.side) for r in parsed.perf]
    assert len(keys) == len(set(keys)) == 6
    assert {r.table for r in parsed.perf} == {"matmul-performance-fp16", "matmul-performance-fp8"}
    fp8 = [r for r in parsed.perf if r.table == "matmul-performance-fp8"]
    assert [(r.shape, r.metrics["Triton"]) for r in fp8] == [
        ("M=256.0, N=256.0, K=256.0", 3.2768),
        ("M=384.0, N=384.0, K=384.0", 9.8304),
    ]


@pytest.mark.parametrize(
    "name, title, x, lines, rows",
    [
        (
            "aiter_pr650_bench_gemm_afp4wfp4_model.txt",
            "GEMM MXFP4 x MXFP4 Benchmark",
            ["M", "hidden_dim", "intermediate_dim"],
            ["fc1", "fc2"],
            15,
        ),
        (
            "intel_issue544_softmax_perf_report_truncated.txt",
            "softmax-performance",
            ["N"],
            ["Triton", "Torch (native)", "Torch (jit)"],
            10,
        ),
    ],
)
def test_the_real_perf_report_samples_read_by_one_rule(
    tmp_path: Path, name: str, title: str, x: list[str], lines: list[str], rows: int
) -> None:
    sample = SAMPLES / name
    if not sample.is_file():
        pytest.fail(f"sample {name} not present under {SAMPLES}" + " (tests/data/samples is part of the checkout)")
    body = sample.read_text().split("\n", 1)[1]  # the first line names the source
    parsed = read(body, noise=False)
    assert {r.table for r in parsed.perf} == {title}
    assert {r.name for r in parsed.perf} == set(lines)
    assert len(parsed.perf) == rows * len(lines)
    assert all([kv.split("=")[0] for kv in r.shape.split(", ")] == x for r in parsed.perf)


# ----- 4. no retry turns a failure into a pass (the inner pytest) ----------------------------------

RETRIED_JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" '
    'failures="0" skipped="0" tests="2"><testcase classname="tests.test_k" name="test_mismatch" time="0.001" />'
    '<testcase classname="tests.test_k" name="test_mismatch" time="0.002" />'
    '<testcase classname="tests.test_k" name="test_ok" time="0.001" /></testsuite></testsuites>'
)
RETRIED_TERMINAL = """\
R..                                                                      [100%]
==================================== PASSES ====================================
=========================== rerun test summary info ============================
RERUN tests/test_k.py::test_mismatch
PASSED tests/test_k.py::test_mismatch
=========================== short test summary info ============================
PASSED tests/test_k.py::test_mismatch
PASSED tests/test_k.py::test_ok
2 passed, 1 rerun in 1.69s
"""


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_a_test_retried_into_a_pass_fails_and_counts_once(tmp_path: Path, kind: str) -> None:
    junit = tmp_path / "report.xml"
    junit.write_text(RETRIED_JUNIT)
    for context, text in (
        ({"junit_xml": junit}, RETRIED_TERMINAL),
        ({}, RETRIED_TERMINAL),
        ({"junit_xml": junit}, RETRIED_TERMINAL.replace("RERUN tests/test_k.py::test_mismatch\n", "")),
    ):
        parsed = read(text, kind, noise=False, **context)
        v, reasons = verdict(parsed, kind)
        assert v == "FAIL", (context, reasons)
        assert any(r.startswith("tests/test_k.py::test_mismatch failed an attempt and ran again") for r in reasons), (
            reasons
        )
        c = parsed.correctness
        assert (c.shapes_checked, c.checks_passed, c.checks_failed) == (2, 1, 1), (context, c)


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_a_rerun_count_without_names_fails(kind: str) -> None:
    parsed = read("..R.                                                [100%]\n3 passed, 1 rerun in 2.0s\n", kind)
    v, reasons = verdict(parsed, kind)
    assert v == "FAIL" and any("reports 1 rerun(s)" in r for r in reasons), reasons


def test_the_inner_pytest_shows_every_retry() -> None:
    from pytest_gpuverify.config.targets import Target, command_argv

    argv = command_argv(Target(name="k", kind=PYTEST, topic="k"), Path("tests/test_k.py"), "run-1")  # type: ignore[arg-type]
    assert argv[4:6] == ["-q", "-rAR"]  # R: pytest-rerunfailures' RERUN lines, where it is installed


# ----- 5. outcomes: a run that ran no test; reasons name only what was read --------------------------

CONFTEST_IMPORT_ERROR = """\
ImportError while loading conftest '/workspace/kk/tests/conftest.py'.
tests/conftest.py:1: in <module>
    import torch
E   ModuleNotFoundError: No module named 'torch'
"""
USAGE_ERROR = """\
ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]
__main__.py: error: unrecognized arguments: --reruns 2
  inifile: /workspace/kk/pytest.ini
  rootdir: /workspace/kk
"""
COLLECTION_ERROR = """\

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_k.py _______________________
ImportError while importing test module '/workspace/kk/tests/test_k.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_k.py:1: in <module>
    import torch
E   ModuleNotFoundError: No module named 'torch'
=========================== short test summary info ============================
ERROR tests/test_k.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 1.32s
"""
COLLECTION_JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" '
    'failures="0" skipped="0" tests="1"><testcase classname="" name="tests.test_k" time="0.000">'
    "<error message=\"collection failure\">ImportError while importing test module '/workspace/kk/tests/test_k.py'.\n"
    "E   ModuleNotFoundError: No module named 'torch'</error></testcase></testsuite></testsuites>"
)


@pytest.mark.parametrize("kind", PYTEST_KINDS)
@pytest.mark.parametrize(
    "text, code, first",
    [
        (CONFTEST_IMPORT_ERROR, 4, "line 1: ImportError while loading conftest '/workspace/kk/tests/conftest.py'."),
        (USAGE_ERROR, 4, "line 2: __main__.py: error: unrecognized arguments: --reruns 2"),
        (COLLECTION_ERROR, 2, "line 4: ImportError while importing test module '/workspace/kk/tests/test_k.py'."),
    ],
)
def test_an_inner_pytest_that_ran_no_test_is_inconclusive_naming_its_first_error(
    tmp_path: Path, kind: str, text: str, code: int, first: str
) -> None:
    contexts: list[dict] = [{"exit_code": code}]
    if text is COLLECTION_ERROR:
        junit = tmp_path / "report.xml"
        junit.write_text(COLLECTION_JUNIT)
        contexts.append({"exit_code": code, "junit_xml": junit})
    for context in contexts:
        parsed = read(text, kind, noise=False, **context)
        v, reasons = verdict(parsed, kind, exit_code=code)
        assert v == "INCONCLUSIVE", (context, reasons)
        assert reasons[0] == f"the inner pytest ran no test (exit code {code}): {first}", reasons


@pytest.mark.parametrize("kind", PYTEST_KINDS)
def test_a_cut_run_says_where_its_outcomes_were_read(kind: str) -> None:
    """A timed-out run printed -v lines and no short summary: its reason names what it read."""
    text = "tests/test_k.py::test_k[1] PASSED                         [ 50%]\ntests/test_k.py::test_k[2] "
    parsed = read(text, kind, noise=False)
    assert "no pytest summary line (output cut short?); outcomes read from the -v lines" in parsed.problems
    assert not any("short summary" in p for p in parsed.problems), parsed.problems


# ----- 6. assert-only harnesses ----------------------------------------------------------------------


def test_an_assert_only_script_declared_so_passes_on_exit_0_only() -> None:
    silent = "[aiter] start build [module_x] under /opt/aiter/jit/build\n"
    assert verdict(read(silent))[0] == "INCONCLUSIVE"
    parsed = read(silent, exit_status_is_check=True, exit_code=0)
    v, reasons = verdict(parsed)
    assert v == "PASS" and parsed.correctness.shapes_checked == 1 and parsed.correctness.checks_passed == 1, reasons
    assert any("exit_status_is_check" in n for n in parsed.notes)
    parsed = read(silent, exit_status_is_check=True, exit_code=1)
    assert parsed.correctness.shapes_checked == 0 and verdict(parsed, exit_code=1)[0] == "FAIL"
    parsed = read(silent + "❌ Triton and Torch differ\n", exit_status_is_check=True, exit_code=0)
    assert verdict(parsed)[0] == "FAIL"  # a printed failure still fails


def test_tritons_maximum_difference_is_read_as_max_abs_error() -> None:
    parsed = read(
        "The maximum difference between torch and triton is 0.001953125\n", exit_status_is_check=True, exit_code=0
    )
    assert parsed.correctness.max_abs_error == 0.001953125


@pytest.mark.parametrize("kind", [*SCRIPT_KINDS, FLYDSL_PYTEST, TRITON_PYTEST])
def test_a_maximum_difference_above_a_declared_limit_fails(kind: str) -> None:
    from pytest_gpuverify.config.targets import Thresholds

    text = "The maximum difference between torch and triton is 0.25\n"
    parsed = read(text if kind in SCRIPT_KINDS else pytest_run(text), kind)
    assert parsed.correctness.max_abs_error == 0.25
    v, reasons = verdict_and_reasons(
        RunRecord(ran=True, exit_code=0), parsed, Thresholds(max_abs_error_max=0.01), TargetRecord(name="t", kind=kind)
    )
    assert v == "FAIL" and any("max_abs_error 0.25 is above" in r for r in reasons), reasons


def test_parse_output_reads_the_exit_status_the_context_gives(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("")
    parsed = parse_output(BENCH, path, ParseContext(exit_status_is_check=True, exit_code=0))
    assert parsed.correctness.passed is True and parsed.correctness.shapes_checked == 1


def test_the_declarations_know_every_verdict_line_by_its_name() -> None:
    """A declaration's verdict_lines_off is checked against config's names, without loading the parsers."""
    from pytest_gpuverify.config.vocabulary import VERDICT_LINE_NAMES
    from pytest_gpuverify.parsers.reading.statements import FAMILIES as VERDICT_LINES

    assert VERDICT_LINE_NAMES == tuple(v.name for v in VERDICT_LINES)
