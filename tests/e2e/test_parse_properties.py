"""Properties of every parser (through dispatch) on hostile input: it never raises, and it never
calls an output ``passed`` unless a readable correctness result was printed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parse_cases import FRAGMENTS, VALID, VALID_PASSING_OUTPUT

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, KINDS, PYTEST, TRITON_PYTEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParsedOutput

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# A line that must fail the run wherever it is inserted, as long as it is there whole.
FAILED_LINE = {
    AITER_OP_TEST: "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]",
    FLYDSL_PYTEST: "FAILED tests/kernels/test_z.py::test_z[1] - AssertionError: boom",
    TRITON_PYTEST: "E   AssertionError: Tensor-likes are not close!",
    BENCH: "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]",
    PYTEST: "E   AssertionError: Tensor-likes are not close!",
}
VALID_LINES = VALID_PASSING_OUTPUT.splitlines(keepends=True)


random_lines = st.lists(
    st.one_of(
        st.text(max_size=80),
        st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
    ),
    max_size=40,
).map(lambda lines: "\n".join(lines))


def parse_bytes(data: bytes, kind: str = AITER_OP_TEST) -> ParsedOutput:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.txt"
        path.write_bytes(data)
        return parse_output(kind, path)


def assert_sound(result: ParsedOutput) -> None:
    """What must hold for every input."""
    assert not [p for p in result.problems if "parser error" in p], result.problems
    ParsedOutput.model_validate_json(result.model_dump_json())  # JSON-clean: no NaN slips through
    correctness = result.correctness
    if correctness.passed is True:
        # an output without a readable correctness result is never passed
        assert result.checks or correctness.checks_passed + correctness.checks_warning > 0
        assert correctness.shapes_checked > 0
        assert not result.failures
    if result.failures:
        assert correctness.passed is False
    assert correctness.nan_count >= 0 and correctness.checks_failed >= 0


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY_SETTINGS
@given(data=st.binary(max_size=4000))
def test_random_bytes(kind: str, data: bytes) -> None:
    assert_sound(parse_bytes(data, kind))


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY_SETTINGS
@given(text=random_lines)
def test_random_text_lines(kind: str, text: str) -> None:
    assert_sound(parse_bytes(text.encode("utf-8", errors="surrogatepass"), kind))


mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "corrupt", "insert_failed"]),
    st.integers(min_value=0, max_value=1000),
    st.binary(min_size=1, max_size=12),
)


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY_SETTINGS
@given(mutations=st.lists(mutation, max_size=6), cut=st.one_of(st.none(), st.integers(min_value=0)))
def test_mutated_valid_output(kind: str, mutations: list[tuple[str, int, bytes]], cut: int | None) -> None:
    failed_line = FAILED_LINE[kind].encode()
    lines = [line.encode() for line in VALID[kind].splitlines(keepends=True)]
    for op, index, junk in mutations:
        index %= len(lines) if lines else 1
        if not lines:
            break
        if op == "delete":
            del lines[index]
        elif op == "duplicate":
            lines.insert(index, lines[index])
        elif op == "corrupt":
            line = lines[index]
            at = len(junk) % (len(line) or 1)
            lines[index] = line[:at] + junk + line[at + len(junk) :]
        else:
            lines.insert(index, failed_line + b"\n")
    data = b"".join(lines)
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    result = parse_bytes(data, kind)
    assert_sound(result)
    if any(line.rstrip(b"\r\n") == failed_line for line in data.split(b"\n")):
        assert result.correctness.passed is False


@pytest.mark.parametrize(
    "kind, perf_rows", [(AITER_OP_TEST, 2 + 4 + 2), (FLYDSL_PYTEST, 4), (TRITON_PYTEST, 0), (BENCH, 6)]
)
def test_the_unmutated_output_passes(kind: str, perf_rows: int) -> None:
    result = parse_bytes(VALID[kind].encode(), kind)
    assert_sound(result)
    assert result.correctness.passed is True, (result.failures, result.problems)
    assert result.failures == []
    assert result.problems == (
        []
        if kind != BENCH
        else [
            "line 8: perf_report table 'bench_gemm_a8w8' is cut short by pandas (print(df)); only the printed rows are read"
        ]
    )
    # aiter: legacy torch/B, markdown ck/triton x2, pandas ck x2; FlyDSL: avg time, flyc, Perf Compare x2
    assert len(result.perf) == perf_rows


# ----- a failure anywhere in a passing output of any kind is never a PASS ----------------------------
#
# A failing check or an error line (aiter's words, error lines and tracebacks), a failure line of the
# statement families (reading/statements.py), an assert_close failure block, pytest's warning of an exception
# in a worker thread: inserted anywhere, whole, in a passing output of every kind.

from pytest_gpuverify.engine.verdict import decide  # noqa: E402
from pytest_gpuverify.parsers.reading.statements import FAMILIES as VERDICT_LINES  # noqa: E402
from pytest_gpuverify.records.artifact import RunRecord  # noqa: E402

NEVER_PASS_LINES = [
    "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]",
    "[checkAllclose rtol=0.01 atol=0.01 FAILED!]",
    "RuntimeError: HIP error: an illegal memory access was encountered",
    "Traceback (most recent call last):",
    "Memory access fault by GPU node-2 (Agent handle: 0x55d0) on address 0x7f00. Reason: Unknown.",
    "Segmentation fault (core dumped)",
    "Aborted (core dumped)",
    "CUDA error: device-side assert triggered",
    "error: no kernel image is available for execution on the device",
    "shape 7: FAILED",
]
VERDICT_FAILURES = [entry.fails for entry in VERDICT_LINES] + [
    "❌ Triton and Torch differ",
    "✗ FAILURE: Outputs or configs differ!",
    "Allclose(atol=0.1, rtol=0.2): False",
    "correctness check: FAILED",
    "  --> FAIL",
    "[FAIL] M=128 N=4096 cos_sim=0.9421",
    "2 of 8 checks failed",
]
NEVER_PASS_BLOCKS = [
    *([line] for line in NEVER_PASS_LINES),
    *([line] for line in VERDICT_FAILURES),
    [
        "Tensor-likes are not close!",
        "",
        "Mismatched elements: 1024 / 1024 (100.0%)",
        "Greatest absolute difference: 0.5 at index (3, 17) (up to 1e-05 allowed)",
    ],
    ["AssertionError: Scalars are not close!", "Expected 1.0 but got 1.5."],
    ["Mismatched elements: 3 / 3 (100%)", "Max absolute difference among violations: 0.1"],
    [
        "  /usr/lib/python3/site-packages/_pytest/threadexception.py:58: PytestUnhandledThreadExceptionWarning: "
        "Exception in thread Thread-1 (work)",
        "",
        "  Traceback (most recent call last):",
        '    File "/usr/lib/python3.12/threading.py", line 1073, in _bootstrap_inner',
        "      self.run()",
        "  AssertionError: Tensor-likes are not close!",
        "",
        "  Mismatched elements: 1024 / 1024 (100.0%)",
        "    warnings.warn(pytest.PytestUnhandledThreadExceptionWarning(msg))",
    ],
    ["  /x/_pytest/unraisableexception.py:67: PytestUnraisableExceptionWarning: Exception ignored in: <function f>"],
    [
        "Traceback (most recent call last):",
        '  File "bench/run.py", line 12, in <module>',
        "    main()",
        "RuntimeError: HIP error: invalid device function",
    ],
]


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY_SETTINGS
@given(at=st.integers(min_value=0), block=st.sampled_from(NEVER_PASS_BLOCKS), progress=st.booleans())
def test_a_failure_line_block_warning_or_traceback_anywhere_is_never_pass(
    kind: str, at: int, block: list[str], progress: bool
) -> None:
    lines = VALID[kind].splitlines(keepends=True)
    at %= len(lines) + 1
    # inserted as lines of their own, the first maybe glued after a tqdm-style \r progress on the line before it
    inserted = ("\r 42%|####      | 42/100" + "\r" if progress else "") + "\n".join(block) + "\n"
    data = "".join(lines[:at] + [inserted] + lines[at:]).encode()
    result = parse_bytes(data, kind)
    assert_sound(result)
    verdict, reasons = decide(RunRecord(ran=True, exit_code=0), result)
    assert verdict != "PASS", (block, at)
