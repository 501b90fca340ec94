"""Outputs of hundreds of megabytes and JUnit reports of 200,000 cases: read as streams, in bounded
memory. Kept out of the unit loop for their seconds, not for any service they need."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from aiter_cases import JIT_NOISE, LONG_NOISE, MARKDOWN_GEMM, check_line

from pytest_gpuverify.config.targets import AITER_OP_TEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.recognizers.pytest_terminal import read_junit


def test_large_noisy_output_streams_in_small_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    noise_block = (JIT_NOISE + LONG_NOISE).encode() * 64
    with open(path, "wb") as fh:
        written = 0
        while written < 100 * (1 << 20):
            fh.write(noise_block)
            written += len(noise_block)
        fh.write(b"[aiter] " + b"x" * (5 << 20) + b"\n")  # one 5 MB line
        fh.write(check_line("ck: ").encode() + b"\n" + MARKDOWN_GEMM.encode())
        fh.write(b"[aiter] " + b"y" * (5 << 20))  # and a last one with no newline
    size = path.stat().st_size
    started = time.monotonic()
    tracemalloc.start()
    try:
        result = parse_output(AITER_OP_TEST, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    assert peak < 64 * (1 << 20), peak
    assert result.bytes_read == size
    assert result.correctness.passed is True
    assert len(result.perf) == 5
    lines = result.lines_read
    # a cut line was never read whole (a check may hide in it): a problem, no longer a note
    unread = "with no \\r to split it at; cut, the rest unread"
    assert result.problems == [
        f"line {lines - 8} was longer than 1 MiB ({(5 << 20) + 8} bytes) {unread}",
        f"line {lines} was longer than 1 MiB ({(5 << 20) + 8} bytes) {unread}",
    ]
    assert elapsed < 60, elapsed  # typically well under 10 s; the bound only catches a pathology


def test_huge_xml_is_capped_and_streamed(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    with open(path, "w") as fh:
        fh.write('<?xml version="1.0"?><testsuites><testsuite tests="200000">')
        for i in range(200_000):
            fh.write(f'<testcase classname="tests.kernels.test_big" name="test_big[{i}]" time="0.001"/>')
        fh.write("</testsuite></testsuites>")
    started = time.monotonic()
    full = read_junit(path)
    assert full.problem is None and full.counts.passed == 200_000
    capped = read_junit(path, cap=1 << 20)
    assert capped.problem == "larger than 1 MiB"
    assert time.monotonic() - started < 30
