"""The prefilter (parsers/prefilter.py, parsers/triggers.py): a parser handed only the lines its
triggers find parses any output to exactly what it parses when handed every line.

Three levels: whole outputs where the lines that matter sit between long runs of noise (chunk
boundaries everywhere, escapes, non-ASCII, giant lines); random mutations of valid outputs
(hypothesis); and single lines: a line that changes an idle parser must be a trigger's.
"""

from __future__ import annotations

import pickle
import random
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gpuverify.parsers import prefilter
from pytest_gpuverify.parsers.aiter import _AiterParser
from pytest_gpuverify.parsers.dispatch import parse_output
from pytest_gpuverify.parsers.lines import LineReader
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.parsers.triggers import AITER
from pytest_gpuverify.targets import AITER_OP_TEST

from test_parse_properties import FRAGMENTS, VALID

FILTERED_KINDS = [AITER_OP_TEST]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Lines a parser has nothing to read in, several of them close to what it reads.
NOISE = [
    "[aiter] WARNING: NUMA balancing is enabled, which may cause errors: numa 1",
    "[aiter] [pid=4242 pname=MainProcess] start build [module_gemm_a8w8] under /opt/aiter/jit/build",
    "[aiter] [pid=4242 pname=MainProcess] \x1b[32mfinish build [module_gemm_a8w8], cost 39.6s \x1b[0m",
    "[aiter] shape is M:16, N:1536, K:7168, found padded_M: 16, is tuned on cu_num = 304 in CKGEMM , status: ok",
    "[W527 04:47:30.915885614 collection.cpp:1100] Warning: ROCTracer produced duplicate flow start: 4 (operator())",
    "[aiter] using soltype=0, solidx=0 for m=16 n=1536 k=7168, max_jobs=8 diffusers costs",
    "  0%/          / 0/100 [00:00<?, ?it/s]",
    "Successfully preprocessed all matching files.",
    "[aiter] hipModuleLoad: /opt/aiter/hsa/gfx942/fmoe/x.co GetFunction: fmoe Success",
    "",
    "\x1b[33mWARNING\x1b[0m: deprecated \x1b[1m\u2192\x1b[0m use \u00abnew\u00bb api \u2014 caf\u00e9",
    "2026-01-02T03:04:05.1234567Z [aiter] import [module_aiter_enum] under /opt/aiter/jit",
    "compile flags: -O3 -DNDEBUG --offload-arch=gfx942\r",
    "\u00a0\u00a0indented with no-break spaces: plus minus \u00b1 5%",
]

# Lines and blocks the aiter parser reads; each block is kept whole, noise goes between blocks.
BLOCKS = [
    ["[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]"],
    ["[aiter] triton: [checkAllclose atol=0.01 rtol=0.01 \x1b[33mwarning!\x1b[0m] a and b results are not all close"],
    ["[aiter] asm: [checkAllclose atol=0.1 rtol=0.1 \x1b[31mfailed!\x1b[0m] a and b results are not all close",
     "    a    : tensor([nan, 1.0])", "\tb    : tensor([inf, 2.0])", "[aiter] -->max abs delta:nan, delta details: 3%"],
    ["-->max delta: 0.0625"],
    ["calling test_gemm(dtype = torch.bfloat16,", "                 m = 16)"],
    ["[aiter] [perf] dim: (4, 32, 8192)  dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, uplift: 5%"],
    ["[perf] a8w8 asm:    50.77 us, ck_moe_2stages:  234.56 us,   654.00 tflops"],
    ["[aiter] gemm summary (markdown):",
     "| dtype          |    m |   ck us |   ck TFLOPS |   ck err |",
     "|:---------------|-----:|--------:|------------:|---------:|",
     "| torch.bfloat16 |   16 | 3.22013 |    0.002604 |        0 |",
     "| torch.bfloat16 |   32 |     nan |    0.005081 |      0.5 |"],
    ["| orphan | header |", "|---|---|", "| 1 | 2 |"],
    ["[aiter] summary:", "            dtype   m   ck us  ck err", "0  torch.bfloat16  16  3.2201     0.0",
     "1  torch.bfloat16  32  3.3012     0.0", "", "[2 rows x 4 columns]"],
    ["[aiter] summary:"],  # a title whose table never comes
    ["0    torch.bfloat16  ...   1.5   ...  "],  # rows with elided columns and no header
    ["[aiter INFO] 2026-01-01 00:00:00,000 - MainProcess:1 - /x.py:1 - f", "ck: [checkAllclose atol=0.01 rtol=0.01 passed~]"],
    ["AssertionError: catastrophic error: 3 elements mismatch"],
    ["cos_sim: 0.9912", "SNR (dB) = 31.5", "max_abs_error=nan", "Max Diff: 0.25", "logits_diff: 1e-3"],
    ["2026-01-02T03:04:05.1234567Z [aiter] gemm summary (markdown):",
     "2026-01-02T03:04:05.1234567Z | dtype | m | ck us |",
     "2026-01-02T03:04:05.1234567Z |---|---|---|",
     "2026-01-02T03:04:05.1234567Z | bf16 | 16 | 1.5 |"],
    ["[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]\r"],
    ["co\x1b[0ms_sim\x1b[1m: 0.5", "\x1b[32m| escaped | header |\x1b[0m", "|---|---|", "| 1 | 2 |"],
    ["Cos\u017fine: 0.1", "s\u0130m: 0.2", "\u0663  x  ...  y"],
]


@contextmanager
def prefilter_settings(enabled: bool, chunk: int) -> Iterator[None]:
    saved = prefilter.ENABLED, prefilter.CHUNK_SIZE
    prefilter.ENABLED, prefilter.CHUNK_SIZE = enabled, chunk
    try:
        yield
    finally:
        prefilter.ENABLED, prefilter.CHUNK_SIZE = saved


def parse_both(data: bytes, kind: str, chunk: int = prefilter.READ_CHUNK) -> tuple[ParsedOutput, ParsedOutput]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.txt"
        path.write_bytes(data)
        with prefilter_settings(True, chunk):
            filtered = parse_output(kind, path)
        with prefilter_settings(False, chunk):
            every_line = parse_output(kind, path)
    return filtered, every_line


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
    data = noisy_output(rng, BLOCKS * 3, most_noise=400)
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


def test_a_noise_line_still_ends_a_markdown_table() -> None:
    table = BLOCKS[7]
    data = "\n".join([*table[:4], NOISE[3], table[4], *NOISE[:3]]).encode() + b"\n"
    result = assert_same(data, AITER_OP_TEST)
    assert [row.source_line for row in result.perf] == [4]  # the row after the noise heads no table


def test_giant_lines_escapes_and_no_final_newline() -> None:
    giant = "[aiter] cos_sim: 0.25 " + "x" * (prefilter.READ_CHUNK + 100)
    data = noisy_output(random.Random(1), [[giant], BLOCKS[0], ["\x1b[3"]], 50).rstrip(b"\n")
    result = assert_same(data, AITER_OP_TEST)
    assert result.correctness.cosine_sim == 0.25 and result.notes


def test_most_noise_is_never_handed_to_the_parser(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(noisy_output(random.Random(7), BLOCKS, most_noise=2000))
    handed: list[int] = []
    parser = _AiterParser()
    reader = prefilter.FilteredLineReader(path, AITER, parser.wants_every_line)
    for lineno, text in reader:
        handed.append(lineno)
        parser.feed(lineno, text)
    total = sum(1 for _ in LineReader(path))
    assert reader.lines_read == total
    assert len(handed) < total / 20, (len(handed), total)


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
@given(mutations=st.lists(mutation, max_size=8), seed=st.integers(0, 2**16), noise=st.integers(0, 40),
       chunk=st.sampled_from([7, 61, 256, 4096]))
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
    "[aiter] ", "[aiter INFO] ", "2026-01-02T03:04:05.123Z ", "-->max delta:", "Summary (markdown):", "torch avg: ",
    "us", "calling ", "AssertionError:", "cosine similarity", "Max Diff", "max abs", "SNR (dB)", "greatest absolute difference",
    "min_cos", "...", "12   ", "\u017f", "\u0130", "\u0131", "\xa0", "\u2009", "\u0663", "\ufeff", "atol", "=None", "sim",
    "diff", "abs", "err", "delta", "db)", "\r", "e-3", "us/iter", "x", "\u00e9",
]


def aiter_state(parser: _AiterParser) -> bytes:
    m = parser.metrics
    return pickle.dumps((
        parser.out.model_dump(), parser.counts, parser.err_counts, parser.checks_seen, parser.failures_seen,
        parser.problems_seen, parser.perf_dropped, parser.nan_count, parser.atol, parser.rtol, sorted(parser.shape_keys),
        parser.call_blocks_checked, parser.call_block_open, parser.call_block_has_check, parser.wants_every_line(),
        parser.orphan_rows_noted, m.values, m.nan_count, m.seen,
    ))


def as_read(raw: bytes) -> str:
    """The text the line reader hands over for one line of raw bytes."""
    text = raw.decode("utf-8", errors="replace")
    return text.rstrip("\r") if text.endswith("\r") else text


def changes_idle_aiter_parser(raw: bytes, call_block_open: bool) -> bool:
    parser = _AiterParser()
    parser.call_block_open = call_block_open  # the one state an idle parser reads a line in
    before = aiter_state(parser)
    parser.feed(2, as_read(raw))
    return aiter_state(parser) != before


def is_candidate(raw: bytes) -> bool:
    chunk = b"x\n" + raw + b"\n"
    return 2 in AITER.candidates(chunk, 2, len(chunk))


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.one_of(st.sampled_from(LINE_PIECES), st.sampled_from(ESCAPES), st.text(max_size=4)),
                       min_size=1, max_size=10), call_block_open=st.booleans())
def test_a_line_that_changes_an_idle_aiter_parser_is_a_candidate(pieces: list[str], call_block_open: bool) -> None:
    raw = "".join(pieces).encode("utf-8", errors="surrogatepass").replace(b"\n", b" ")
    if changes_idle_aiter_parser(raw, call_block_open):
        assert is_candidate(raw), raw
