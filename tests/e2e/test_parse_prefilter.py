"""The prefilter (parsers/reading/prefilter.py, each recognizer's triggers): a reading handed only the
lines its kind's triggers find reads any output to exactly what it reads when handed every line.

Three levels: whole outputs where the lines that matter sit between long runs of noise (chunk
boundaries everywhere, escapes, non-ASCII, giant lines); random mutations of valid outputs
(hypothesis); and single lines: a line that changes an idle recognizer must be a trigger's.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parse_cases import FRAGMENTS, NOISE, VALID, parse_both, prefilter_settings
from pydantic import BaseModel

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, PYTEST_KINDS, TRITON_PYTEST
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.reading import hsscan, prefilter
from pytest_gpuverify.parsers.reading.columns import Table
from pytest_gpuverify.parsers.reading.line import clean
from pytest_gpuverify.parsers.reading.lines import LineReader
from pytest_gpuverify.parsers.reading.measures import CloseBlock
from pytest_gpuverify.parsers.registry import plan_for, registry
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput

TRIGGERS = {kind: plan_for(kind).triggers for kind in (AITER_OP_TEST, BENCH, FLYDSL_PYTEST, TRITON_PYTEST)}
AITER = TRIGGERS[AITER_OP_TEST]
FILTERED_KINDS = list(TRIGGERS)
# The engine fixture below is function-scoped on purpose: it only switches a module setting.
QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=QUIET)


pytestmark = pytest.mark.usefixtures("engine")


# Lines and blocks the aiter parser reads; each block is kept whole, noise goes between blocks.
BLOCKS = [
    ["[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]"],
    ["[aiter] triton: [checkAllclose atol=0.01 rtol=0.01 \x1b[33mwarning!\x1b[0m] a and b results are not all close"],
    [
        "[aiter] asm: [checkAllclose atol=0.1 rtol=0.1 \x1b[31mfailed!\x1b[0m] a and b results are not all close",
        "    a    : tensor([nan, 1.0])",
        "\tb    : tensor([inf, 2.0])",
        "[aiter] -->max abs delta:nan, delta details: 3%",
    ],
    ["-->max delta: 0.0625"],
    ["calling test_gemm(dtype = torch.bfloat16,", "                 m = 16)"],
    ["[aiter] [perf] dim: (4, 32, 8192)  dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, uplift: 5%"],
    ["[perf] a8w8 asm:    50.77 us, ck_moe_2stages:  234.56 us,   654.00 tflops"],
    [
        "[aiter] gemm summary (markdown):",
        "| dtype          |    m |   ck us |   ck TFLOPS |   ck err |",
        "|:---------------|-----:|--------:|------------:|---------:|",
        "| torch.bfloat16 |   16 | 3.22013 |    0.002604 |        0 |",
        "| torch.bfloat16 |   32 |     nan |    0.005081 |      0.5 |",
    ],
    ["| orphan | header |", "|---|---|", "| 1 | 2 |"],
    [
        "[aiter] summary:",
        "            dtype   m   ck us  ck err",
        "0  torch.bfloat16  16  3.2201     0.0",
        "1  torch.bfloat16  32  3.3012     0.0",
        "",
        "[2 rows x 4 columns]",
    ],
    ["[aiter] summary:"],  # a title whose table never comes
    ["0    torch.bfloat16  ...   1.5   ...  "],  # rows with elided columns and no header
    [
        "[aiter INFO] 2026-01-01 00:00:00,000 - MainProcess:1 - /x.py:1 - f",
        "ck: [checkAllclose atol=0.01 rtol=0.01 passed~]",
    ],
    ["AssertionError: catastrophic error: 3 elements mismatch"],
    ["cos_sim: 0.9912", "SNR (dB) = 31.5", "max_abs_error=nan", "Max Diff: 0.25", "logits_diff: 1e-3"],
    [
        "2026-01-02T03:04:05.1234567Z [aiter] gemm summary (markdown):",
        "2026-01-02T03:04:05.1234567Z | dtype | m | ck us |",
        "2026-01-02T03:04:05.1234567Z |---|---|---|",
        "2026-01-02T03:04:05.1234567Z | bf16 | 16 | 1.5 |",
    ],
    ["[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]\r"],
    ["co\x1b[0ms_sim\x1b[1m: 0.5", "\x1b[32m| escaped | header |\x1b[0m", "|---|---|", "| 1 | 2 |"],
    ["Cos\u017fine: 0.1", "s\u0130m: 0.2", "\u0663  x  ...  y"],
]
# error lines, unread words, other check spellings, tables in other layouts
ALARM_BLOCKS = [
    [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "RuntimeError: HIP error: an illegal memory access was encountered",
    ],
    ["Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x2. Reason: Unknown."],
    ["Segmentation fault (core dumped)"],
    ["Aborted"],
    ["error: no kernel image is available"],
    ["shape 3: FAILED"],
    ["[checkAllclose rtol=0.01 atol=0.01 FAILED!]"],
    ["[checkAllclose unreadable]"],
    ["+----+--------+", "|  m |   ck err |", "+====+========+", "| 16 |   0.5  |", "+----+--------+"],
    [
        "\u250f\u2501\u2501\u2533\u2501\u2501\u2513",
        "\u2503 m \u2503 err \u2503",
        "\u2521\u2501\u2501\u2547\u2501\u2501\u2529",
        "\u2502 16 \u2502 0.7 \u2502",
        "\u2514\u2500\u2500\u2534\u2500\u2500\u2518",
    ],
    ["  m    ck us    ck err", "---  -------  --------", " 16     3.22      0.9"],
    ["   m | ck err", "-----|-------", "  16 | 0.6"],
    ["gemm results:", "    m  ck us  ck err", "0  16   3.22    0.97"],
    ["| m | ck err |", "| 16 | 0.97 |"],
]


def assert_same(data: bytes, kind: str, chunk: int = prefilter.READ_CHUNK) -> ParsedOutput:
    filtered, every_line = parse_both(data, kind, chunk)
    assert filtered.model_dump() == every_line.model_dump()
    return filtered


def noisy_output(rng: random.Random, blocks: list[list[str]], most_noise: int) -> bytes:
    lines: list[str] = []
    for block in blocks:
        lines += [rng.choice(NOISE) for _ in range(rng.randint(0, most_noise))]
        lines += block
    lines += [rng.choice(NOISE) for _ in range(rng.randint(0, most_noise))]
    return ("\n".join(lines) + "\n").encode("utf-8")


@pytest.mark.parametrize("chunk", [61, 4096, prefilter.READ_CHUNK])
def test_lines_that_matter_between_long_runs_of_noise(chunk: int) -> None:
    rng = random.Random(chunk)
    data = noisy_output(rng, (BLOCKS + ALARM_BLOCKS) * 3, most_noise=400)
    result = assert_same(data, AITER_OP_TEST, chunk)
    # the output does hold what the blocks print, at the lines they were printed at
    assert result.correctness.passed is False and result.correctness.nan_count > 0
    assert result.correctness.cosine_sim == 0.5  # the escaped "co\x1b[0ms_sim: 0.5", the lowest printed
    assert any("elided columns and no header" in p for p in result.problems)
    lines = data.decode().split("\n")
    for check in result.checks:
        assert "checkAllclose" in lines[check.line - 1]
    for row in result.perf:
        assert row.source_line is not None
        if row.us_median is not None:
            assert f"{row.us_median:g}" in lines[row.source_line - 1]


@pytest.mark.parametrize("kind", FILTERED_KINDS)
@pytest.mark.parametrize("chunk", [29, 4096])
def test_each_parsers_valid_output_between_noise(kind: str, chunk: int) -> None:
    rng = random.Random(chunk)
    blocks = [[line] for line in VALID[kind].splitlines()] + BLOCKS
    result = assert_same(noisy_output(rng, blocks, most_noise=60), kind, chunk)
    assert result.lines_read > 500 and (result.perf or kind == TRITON_PYTEST)


def test_a_noise_line_still_ends_a_markdown_table() -> None:
    table = BLOCKS[7]
    data = "\n".join([*table[:4], NOISE[3], table[4], *NOISE[:3]]).encode() + b"\n"
    result = assert_same(data, AITER_OP_TEST)
    assert [row.source_line for row in result.perf] == [4]  # the row after the noise heads no table


def test_giant_lines_escapes_and_no_final_newline() -> None:
    giant = "[aiter] cos_sim: 0.25 " + "x" * (prefilter.READ_CHUNK + 100)
    data = noisy_output(random.Random(1), [[giant], BLOCKS[0], ["\x1b[3"]], 50).rstrip(b"\n")
    result = assert_same(data, AITER_OP_TEST)
    assert result.correctness.cosine_sim == 0.25 and any(
        "rest unread" in p for p in result.problems
    )  # cut: never a silent PASS


def reading(kind: str) -> tuple[Evidence, list]:
    """A fresh reading of ``kind``: its evidence and its recognizers."""
    ev = Evidence("test", ParseContext(), inside_tests=kind in PYTEST_KINDS)
    return ev, [cls(ev.context, ev) for cls in plan_for(kind).recognizers]


def test_most_noise_is_never_handed_to_the_recognizers(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(noisy_output(random.Random(7), BLOCKS, most_noise=2000))
    handed: list[int] = []
    ev, recognizers = reading(AITER_OP_TEST)
    reader = prefilter.FilteredLineReader(path, AITER, lambda: any(r.wants_every_line() for r in recognizers))
    for lineno, text in reader:
        handed.append(lineno)
        line = clean(lineno, text, sides=False)
        for recognizer in recognizers:
            recognizer.feed(line)
    total = sum(1 for _ in LineReader(path))
    assert reader.lines_read == total
    assert len(handed) < total / 20, (len(handed), total)


@pytest.mark.parametrize("chunk, max_line", [(3, 10), (7, 7), (64, 10), (4096, 1 << 20)])
def test_the_reader_counts_and_cuts_lines_as_the_line_reader_does(tmp_path: Path, chunk: int, max_line: int) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\r\ntwo\n\nfour \xff\n" + b"a" * 25 + b"\nafter\n" * 9 + b"b" * 11)
    plain = LineReader(path, max_line=max_line, chunk_size=chunk)
    every = prefilter.FilteredLineReader(path, AITER, lambda: True, max_line=max_line, chunk_size=chunk)
    none = prefilter.FilteredLineReader(path, AITER, lambda: False, max_line=max_line, chunk_size=chunk)
    expected = list(plain)
    assert list(every) == expected
    handed = list(none)  # no line is a trigger's: only the first of each chunk and the last
    assert set(handed) <= set(expected) and handed[-1] == expected[-1]
    for reader in (every, none):
        assert (reader.lines_read, reader.bytes_read, reader.truncated_lines) == (
            plain.lines_read,
            plain.bytes_read,
            plain.truncated_lines,
        )


@pytest.mark.parametrize("chunk", [61, 4096, prefilter.READ_CHUNK])
def test_a_recognizer_bug_reports_the_same_line_and_count(tmp_path: Path, chunk: int, monkeypatch) -> None:
    from pytest_gpuverify.parsers.recognizers.measures import Measures

    feed = Measures.feed

    def raising(self, line) -> None:  # a recognizer with a bug: it raises on the line holding ``BOOM``
        if "BOOM" in line.text:
            raise RuntimeError("boom")
        feed(self, line)

    monkeypatch.setattr(Measures, "feed", raising)
    path = tmp_path / "out.txt"
    lines = noisy_output(random.Random(3), BLOCKS, 300).decode().split("\n")
    lines[len(lines) // 2] = "cos_sim: 0.5 BOOM"
    path.write_text("\n".join(lines))
    results = []
    for enabled in (True, False):
        with prefilter_settings(enabled, chunk):
            results.append(parse_output(AITER_OP_TEST, path).model_dump())
    assert results[0] == results[1]
    assert f"parser error at line {len(lines) // 2 + 1}: RuntimeError: boom" in results[0]["problems"]


def test_escaped_chunk_lines_are_found_by_number() -> None:
    # escapes shift the stripped copy's lines; the candidates must map back to the same lines
    lines = [f"\x1b[1m{i}\x1b[0m noise \x1b[2K" * (i % 5) for i in range(300)]
    for at in (3, 150, 299):
        lines[at] = f"\x1b[31mcos: {at}.5\x1b[0m"
    chunk = ("x\n" + "\n".join(lines) + "\n").encode()
    found = AITER.candidates(chunk, 2, len(chunk))
    starts = {chunk.index(lines[at].encode()) for at in (3, 150, 299)}
    assert starts <= set(found)
    assert all(f == 2 or chunk[f - 1 : f] == b"\n" for f in found)


# ----- random outputs -----------------------------------------------------------------------

mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "corrupt", "insert_fragment", "insert_escape"]),
    st.integers(min_value=0, max_value=1000),
    st.binary(min_size=1, max_size=12),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join),
)


@pytest.mark.parametrize("kind", FILTERED_KINDS)
@SETTINGS
@given(
    mutations=st.lists(mutation, max_size=8),
    seed=st.integers(0, 2**16),
    noise=st.integers(0, 40),
    chunk=st.sampled_from([7, 61, 256, 4096]),
)
def test_mutated_outputs_parse_the_same_with_and_without_the_prefilter(
    kind: str, mutations: list, seed: int, noise: int, chunk: int
) -> None:
    rng = random.Random(seed)
    lines = [line.encode() for line in VALID[kind].splitlines(keepends=True)]
    for op, index, junk, fragment in mutations:
        index %= len(lines) + 1
        if op == "delete" and index < len(lines):
            del lines[index]
        elif op == "duplicate" and index < len(lines):
            lines.insert(index, lines[index])
        elif op == "corrupt" and index < len(lines):
            line = lines[index]
            at = len(junk) % (len(line) or 1)
            lines[index] = line[:at] + junk + line[at + len(junk) :]
        elif op == "insert_fragment":
            lines.insert(index, fragment.encode("utf-8", errors="surrogatepass") + b"\n")
        elif op == "insert_escape" and index < len(lines):
            line = lines[index]
            at = len(junk) % (len(line) or 1)
            lines[index] = line[:at] + rng.choice([b"\x1b[0m", b"\x1b[1;31m", b"\x1b]0;t\x07"]) + line[at:]
    out: list[bytes] = []
    for line in lines:
        out += [rng.choice(NOISE).encode() + b"\n" for _ in range(rng.randint(0, noise))]
        out.append(line)
    assert_same(b"".join(out), kind, chunk)


# ----- single lines: what changes an idle parser is a trigger's ---------------------------------

ESCAPES = ["\x1b[0m", "\x1b[1;31m", "\x1b[2K", "\x1b]0;x\x07", "\x1bM", "\x1b", "\x1b["]
LINE_PIECES = FRAGMENTS + [
    "[aiter] ",
    "[aiter INFO] ",
    "2026-01-02T03:04:05.123Z ",
    "-->max delta:",
    "Summary (markdown):",
    "torch avg: ",
    "us",
    "calling ",
    "AssertionError:",
    "cosine similarity",
    "Max Diff",
    "max abs",
    "SNR (dB)",
    "greatest absolute difference",
    "min_cos",
    "...",
    "12   ",
    "\u017f",
    "\u0130",
    "\u0131",
    "\xa0",
    "\u2009",
    "\u0663",
    "\ufeff",
    "atol",
    "=None",
    "sim",
    "diff",
    "abs",
    "err",
    "delta",
    "db)",
    "\r",
    "e-3",
    "us/iter",
    "x",
    "\u00e9",
    "E",
    "E\t",
    "XFAIL ",
    "XPASS ",
    "____",
    "Greatest relative difference: 1.0",
    "Cosine Similarity: ",
    "2 passed in 1.0s",
    "a==b",
    "\u0663 passed in 1s",
    "Kernel avg time: ",
    " ms",
    "TB/s=",
    "us_p50=",
    "[Perf] ",
    "FlyDSL MoE ",
    "Testing ",
    "FAILED",
    "3 TESTS FAILED",
    "\u2717 Check failed",
    "Check passed",
    "| PASS |",
    "(atol=",
    "Max absolute error",
    "[3 rows x 5 columns]",
    "    ",
    "kernel (us)",
    "gbps",
    "\u00b5s",
    "usec",
    "a  b  c",
    "[base] ",
    "[B] ",
    "A: ",
    "=== Benchmark: current vs main ===",
    "\u3000",
    "\U0001d7d9",
    "\u0085",
    "\x1c",
    "\u212a",
    "\u0662\u0660\u0662\u0666-01-01T00:00:00Z ",
    "[head] ",
    "b:\t",
    "calling f(",
    "\u0663  a ... b",
    "  ===",
    " [3 rows x 2 columns]",
    # alarms, check spellings, table bars and err headers
    "Traceback (most recent call last)",
    "RuntimeError",
    "Error",
    "Error:",
    "error:",
    "ERROR:",
    "HIP error",
    "CUDA error",
    "hipErrorIllegalAddress",
    "Exception:",
    "Memory access fault",
    "Segmentation fault",
    "Aborted",
    "core dumped",
    "illegal memory access",
    "Fatal Python error",
    "failed",
    "Failed",
    "FAILED!",
    "0 failed",
    "failed to ",
    "failed=0",
    "[checkAllclose",
    "rtol=",
    " err ",
    "ck err",
    "ERR",
    "err_ratio",
    "|",
    " | ",
    "\u2502",
    "\u2503",
    "\u2551",
    "\u2500\u2500\u2500",
    "+---+",
    ": 0.5",
    "\u00a0err",
    # NaN in a printed result (shape_checks.py)
    "tensor(",
    "tensor([",
    "output",
    "out",
    "triton_out",
    "result",
    ": nan",
    "= inf",
    "-inf",
    "NaN",
    "\u2009nan",
    # the printout's scan (printout.py): verdict lines, assert_close blocks, pytest's warnings, first errors
    "\u2705",
    "\u274c",
    "\u2713",
    "\u2717",
    "\u2714",
    "\u2718",
    "\u2716",
    "\u274e",
    "\u2611",
    " match",
    " differ",
    "PASS",
    "PASSED",
    "Passed",
    "FAIL",
    "FAILURE",
    "-->",
    "[",
    "]",
    "!",
    "Allclose(atol=0.1, rtol=0.2)",
    "all_close",
    ": True",
    ": False",
    "Correctness",
    "correct",
    "incorrect",
    "Accuracy",
    "verification",
    "Validation",
    "numerics",
    "Result",
    "check",
    " test ",
    " OK",
    "ok",
    "Some tests",
    "3 tests",
    "0 tests",
    " failed to ",
    "max_abs_diff=0.1",
    "Tensor-likes are not close!",
    "Scalars are not equal!",
    "Mismatched elements: 3 / 4 (75%)",
    "Mismatched elements: 0 / 4",
    "Greatest absolute difference: x",
    "PytestUnhandledThreadExceptionWarning",
    "PytestUnraisableExceptionWarning",
    "ImportError while loading conftest",
    "The maximum difference between ",
    " and triton is ",
    "\u017f",
    "\u212a",
    # statements in any position, crash texts, blocks, tables of every layout, perf statements
    "status: ",
    "M=256 N=4096: ",
    "[FAIL] ",
    "PASS: 3, FAIL: 1",
    "tensor(False)",
    "tensor(True, device='cuda:0')",
    "match: ",
    "passed=",
    "Results differ!",
    "Outputs do not match",
    "Mismatch found at index 12",
    "MISMATCH",
    "NaN detected in output",
    "not ok 3 - gemm",
    "ok 3 - gemm",
    "# TODO",
    "# SKIP",
    "[  FAILED  ] S.t (1 ms)",
    "[       OK ] S.t (0 ms)",
    "[  PASSED  ] 5 tests.",
    "[==========]",
    "Killed",
    "Bus error",
    "double free or corruption",
    "*** stack smashing detected ***",
    "terminate called after throwing an instance of",
    "HSA_STATUS_ERROR_X",
    "aborting with error",
    "GPU core dump created",
    "HIP out of memory",
    "Floating point exception",
    "free(): invalid",
    "Perf: 1.23 ms, 110.5 TFlops, 300.2 GB/s, ",
    "Best Perf: ",
    "Total time: 0.35ms",
    "Rate: 2841.49 inferences/sec",
    "12 tok/s",
    "Throughput: 1.0 requests/s, 2.0 tokens/s",
    "(tok/s):",
    "9.50it/s",
    "cost 39.6s",
    "transA,transB,m,n,hipblaslt-Gflops,us",
    "N,N,128,128,403.2,10.4",
    "[0]:",
    "Status   Torch Latency (ms)   TFLOPS",
    "----------------------------------------",
    "SUCCESS   0.0083   1.2",
    "Operator: mm  Performance Test",
    "x_val   triton-accuracy",
    "-----  ---------",
    "Correctness",
    "| Correctness |",
    "norm_error,atol,rtol",
    "#wrong",
    "# (us) (GB/s)",
    "type hints mismatch",
    "wrong results",
    "incorrect",
    "Incorrect results!",
    "Verifies OK",
    "FAILED: gpu",
    "max_diff",
    "dst_dtype",
    # each recognizer's own examples: a new format's lines are held to its triggers without a line here
    *(piece for cls in registry() for piece in cls.examples),
]


BOOKKEEPING = {"_settled_through"}  # how far the evidence has settled: no state of what was read


def state_of(obj: object, depth: int = 0) -> str:
    """Everything a parser keeps, as text (callables left out)."""
    if depth > 6:
        return "..."
    if isinstance(obj, BaseModel):
        return repr(obj.model_dump())
    if isinstance(obj, (str, int, float, bool, bytes, type(None))):
        return repr(obj)
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(state_of(x, depth + 1) for x in obj) + "]"
    if isinstance(obj, (set, frozenset)):
        return "{" + ",".join(sorted(state_of(x, depth + 1) for x in obj)) + "}"
    if isinstance(obj, dict):
        return "{" + ",".join(f"{state_of(k)}:{state_of(v, depth + 1)}" for k, v in obj.items()) + "}"
    if hasattr(obj, "__dict__") and not callable(obj):
        fields = ",".join(
            f"{k}={state_of(v, depth + 1)}" for k, v in vars(obj).items() if not callable(v) and k not in BOOKKEEPING
        )
        return f"{type(obj).__name__}({fields})"
    return type(obj).__name__


def idle_reading(kind: str, variant: int) -> tuple[Evidence, list]:
    """A kind's recognizers with no table open, in one of the states lines are read in between tables."""
    ev, recognizers = reading(kind)
    for recognizer in recognizers:
        if recognizer.name == "aiter-checks":
            recognizer.call_block_open = bool(variant & 1)
        elif recognizer.name == "pytest-terminal":
            term = recognizer.term
            term.in_trace, term.test, term.section = bool(variant & 1), "test_x", "FAILURES"
            if variant & 2:
                term.block = CloseBlock(1)
                term.blocks.append(("test_x", term.block))
        elif recognizer.name == "flydsl":
            recognizer.test = "test_x"  # the test it last read a line of
        elif recognizer.name == "tables" and variant & 4:
            recognizer.last = Table(1, [], title="plot")  # a footer may follow
    assert not any(r.wants_every_line() for r in recognizers)
    return ev, recognizers


def is_candidate(kind: str, raw: bytes) -> bool:
    chunk = b"x\n" + raw + b"\n"
    found = TRIGGERS[kind].candidates(chunk, 2, len(chunk))
    return found is None or 2 in found  # None: about every line is a candidate


@pytest.mark.parametrize("kind", FILTERED_KINDS)
@settings(max_examples=1500, deadline=None, suppress_health_check=QUIET)
@given(
    pieces=st.lists(
        st.one_of(st.sampled_from(LINE_PIECES), st.sampled_from(ESCAPES), st.text(max_size=4)), min_size=1, max_size=10
    ),
    variant=st.integers(0, 7),
)
def test_a_line_that_changes_an_idle_recognizer_is_a_candidate(kind: str, pieces: list[str], variant: int) -> None:
    raw = "".join(pieces).encode("utf-8", errors="surrogatepass").replace(b"\n", b" ")
    text = raw.decode("utf-8", errors="replace")  # what the line reader hands over
    ev, recognizers = idle_reading(kind, variant)
    before = state_of((ev, recognizers))
    line = clean(2, text.rstrip("\r") if text.endswith("\r") else text, sides=kind == BENCH)
    for recognizer in recognizers:
        recognizer.feed(line)
    ev.settle(3)
    if state_of((ev, recognizers)) != before:
        assert is_candidate(kind, raw), raw


@pytest.mark.skipif(not hsscan.available(), reason="no hyperscan wheel here")
def test_a_pattern_hyperscan_refuses_falls_back_to_re(engine: str) -> None:
    """A Hyperscan build that refuses a pattern costs speed, never a line."""
    if engine != "hyperscan":
        pytest.skip("about the Hyperscan engine")
    broken = prefilter.Triggers(AITER.fold, AITER.pick, hsscan.PatternSet(lambda ascii: [rb"(?<=a)b"]), AITER.raw)
    chunk = b"x\n[aiter] start build\ncos_sim: 0.99\n| m | us |\n"
    assert broken.candidates(chunk, 2, len(chunk)) == AITER_RE_ONLY.candidates(chunk, 2, len(chunk))
    assert broken.patterns is None  # the re engine from then on


AITER_RE_ONLY = prefilter.Triggers(AITER.fold, AITER.pick, None, AITER.raw)
