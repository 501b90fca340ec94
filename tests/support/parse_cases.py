"""Outputs and helpers the parser tests share: valid outputs of each kind, the fragments mutated
into them, the noise between them, and a parse with and without the prefilter."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, PYTEST, TRITON_PYTEST
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.reading import hsscan, prefilter
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

# A passing run that uses every format the parser reads.
VALID_PASSING_OUTPUT = """\
[aiter] start build [module_quant] under /opt/aiter/aiter/jit/build/module_quant
[aiter] finish build [module_quant], cost 19.54064721s
[aiter]\x20
calling test_quant(dtype                        = torch.bfloat16,
                   m                            = 16)
[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]
[aiter] triton: dynamic quant[checkAllclose atol=0.01 rtol=0.01 \x1b[33mwarning!\x1b[0m] a and b results are not all close
[aiter] -->max abs delta:0.0625, delta details: 0.3% (12 of 4096) elements
[aiter] [perf] dim: (4, 32, 8192)        dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, \
uplift: 156.9%[checkAllclose atol=0.01 rtol=0.01 passed~]
[aiter] quant summary (markdown):
| dtype          |    m |   ck us |   ck TFLOPS |   ck err |   triton us |   triton err |
|:---------------|-----:|--------:|------------:|---------:|------------:|-------------:|
| torch.bfloat16 |   16 | 3.22013 |    0.002604 |        0 |     4.10022 |     0.000122 |
| torch.bfloat16 |   32 | 3.30117 |    0.005081 |        0 |     4.20001 |            0 |
[aiter] summary:
            dtype   m   ck us  ck err
0  torch.bfloat16  16  3.2201     0.0
1  torch.bfloat16  32  3.3012     0.0
[aiter] done
"""


VALID_FLYDSL_OUTPUT = """\
============================= test session starts ==============================
collected 3 items

tests/kernels/test_rmsnorm.py ..s                                        [100%]

==================================== PASSES ====================================
______________________________ test_rmsnorm[bf16] ______________________________
----------------------------- Captured stdout call -----------------------------
Testing RMSNorm (M=64, N=256, dtype=bf16)
Kernel avg time: 0.0456 ms via run_perftest (warmup=3, iters=20)
Bandwidth: 2510.12 GB/s
Max absolute error: 1.95e-03 (atol=0.01)
PASSED
___________________________ test_gemm[64-256-128] ____________________________
----------------------------- Captured stdout call -----------------------------
[flyc] Throughput: 12.3 us, 45.67 TFLOPS, BW: 1.234 TB/s
Logits Diff: 0.000012, Max Diff: 0.003906, Mean Diff: 0.000101
 \u2713 Check passed
op         shape              dtype  FlyDSL(gpu us)  AIter(gpu us)    speedup
wmma_gemm  4096x4096x4096     bf16          1,264.1        1,119.7      1.13x
=========================== short test summary info ============================
PASSED tests/kernels/test_rmsnorm.py::test_rmsnorm[bf16]
PASSED tests/kernels/test_rmsnorm.py::test_gemm[64-256-128]
SKIPPED [1] tests/kernels/test_rmsnorm.py:20: CDNA only
==================== 2 passed, 1 skipped in 3.21s ====================
"""


VALID_TRITON_OUTPUT = """\
op_tests/triton_tests/test_gemm_a8w8.py ..                               [100%]
==================================== PASSES ====================================
Cosine Similarity: 0.998741
=========================== short test summary info ============================
PASSED op_tests/triton_tests/test_gemm_a8w8.py::test_gemm[1-1280-1024]
PASSED op_tests/triton_tests/test_gemm_a8w8.py::test_gemm[1-1280-8192]
2 passed in 4.40s
"""


VALID_BENCH_OUTPUT = """\
[A] [aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]
[B] [aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]
cos_sim=0.9995 snr_db=38.1
bench_gemm_a8w8:
         M       N       K  Time_(ms) (A)  Time_(ms) (B)
0      1.0  1280.0  8192.0       0.012345       0.011000
1     32.0  1280.0  8192.0       0.014500       0.013250
..     ...     ...     ...            ...            ...

[3 rows x 5 columns]
  side       shape    kernel (us)   TFLOPS
  base   4096x4096          41.20    667.1
  head   4096x4096          39.90    688.8
"""


VALID = {
    AITER_OP_TEST: VALID_PASSING_OUTPUT,
    FLYDSL_PYTEST: VALID_FLYDSL_OUTPUT,
    TRITON_PYTEST: VALID_TRITON_OUTPUT,
    BENCH: VALID_BENCH_OUTPUT,
    PYTEST: VALID_TRITON_OUTPUT,  # any repo's pytest run prints what aiter's Triton tests print
}


# Pieces of aiter output, so random text reaches the parser's states and not only its fallbacks.
FRAGMENTS = [
    "[aiter] ",
    "[aiter INFO] 2026-01-01 00:00:00,000.000 - MainProcess:1 - /x.py:1 - f",
    "[checkAllclose atol=0.01 rtol=0.01 ",
    "passed~]",
    "warning!]",
    "failed!]",
    "catastrophic!]",
    "\x1b[32m",
    "\x1b[0m",
    "-->max abs delta:",
    "nan",
    "inf",
    "NaN",
    "None",
    "1.5",
    "0.97",
    "0",
    "| ",
    " |",
    "|:---|---:|",
    "|------:|",
    " us",
    "ck us",
    "err",
    "TFLOPS",
    "summary:",
    "summary (markdown):",
    "[perf] dim: (4, 32, 8192)",
    "torch avg: 1.2 us",
    "B avg: 3 us",
    "uplift: 5.0%",
    "calling test_x(",
    "    a    : ",
    "AssertionError: catastrophic error",
    "...",
    "..",
    "[3 rows x 9 columns]",
    "  ",
    " ",
    "\t",
    "=",
    ",",
    ":",
    "0  ",
    "Empty DataFrame",
    # inner pytest, FlyDSL, perf_report, metrics
    "=== ",
    " ===",
    "FAILURES",
    "PASSES",
    "___ ",
    " ___",
    "test_x[bf16]",
    "--- Captured stdout call ---",
    "3 passed",
    "1 failed",
    "2 skipped",
    "no tests ran",
    " in 0.5s",
    "PASSED ",
    "FAILED ",
    "ERROR ",
    "tests/kernels/test_x.py::test_y[1]",
    " - ",
    "SKIPPED [1] ",
    "E   ",
    "AssertionError: Tensor-likes are not close!",
    "Mismatched elements: 1 / 4 (25.0%)",
    "Greatest absolute difference: 0.5 at index (0,) (up to 0.01 allowed)",
    "[flyc] Throughput: 12.3 us, 45.67 TFLOPS, BW: 1.234 TB/s",
    "Kernel avg time: 0.0123 ms",
    "Bandwidth: 1 GB/s",
    "Testing RMSNorm (M=1, N=2)",
    "\u2717 Check failed",
    "\u2713 Check passed",
    "FlyDSL MoE stage1[x]: 1 us, 2 TFLOPS, 3 TB/s",
    "| PASS |",
    " 1.0e-02  0.999 ",
    "cos=",
    "cos_sim=",
    "snr_db=",
    "max_abs_error=",
    "Logits Diff: ",
    "0.99",
    "bench_x:",
    "         M       N  Time_(ms)",
    "0    1.0  2.0  0.5",
    "..  ...",
    "[A] ",
    "B: ",
    " (A)",
    "side",
    "op  shape  dtype  FlyDSL(gpu us)  speedup",
    "1,264.1",
    "2.69x",
    "=== Benchmark: current vs main ===",
    # error lines, other check spellings, tables in other layouts, stat columns
    "Traceback (most recent call last):",
    "RuntimeError: HIP error: ",
    "Segmentation fault",
    "Aborted",
    "error: ",
    "FAILED!]",
    "[checkAllclose rtol=0.01 atol=0.01 ",
    "+----+----+",
    "+====+",
    "\u2502 ",
    " \u2502",
    "\u2500\u2500\u2500",
    "---  ---",
    "  m    err",
    " 16    0.9",
    "results:",
    "us_median  min_us  max_us  runs",
    "p99 (us)",
    "\r",
]


ENGINES = ["hyperscan", "re"] if hsscan.available() else ["re"]


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


@contextmanager
def prefilter_settings(enabled: bool, chunk: int) -> Iterator[None]:
    saved = prefilter.ENABLED, prefilter.CHUNK_SIZE
    prefilter.ENABLED, prefilter.CHUNK_SIZE = enabled, chunk
    try:
        yield
    finally:
        prefilter.ENABLED, prefilter.CHUNK_SIZE = saved


def parse_both(
    data: bytes, kind: str, chunk: int = prefilter.READ_CHUNK, **context
) -> tuple[ParsedOutput, ParsedOutput]:
    """``context``: the ParseContext's fields (declared words, exit code, JUnit report)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.txt"
        path.write_bytes(data)
        with prefilter_settings(True, chunk):
            filtered = parse_output(kind, path, ParseContext(**context))
        with prefilter_settings(False, chunk):
            every_line = parse_output(kind, path, ParseContext(**context))
    return filtered, every_line


def read_agreeing(
    text: str | bytes, kind: str = BENCH, chunk: int = 4096, noise: tuple[int, int] | None = (5, 30), **context
) -> ParsedOutput:
    """``text`` read with the prefilter and with every line handed over: both must agree, and no
    recognizer may fail. ``noise``: between how many lines of noise it sits on each side (a seed of
    its length draws them); None reads it alone."""
    data = text.encode() if isinstance(text, str) else text
    if noise is not None:
        rng = random.Random(len(data))
        before, after = ([rng.choice(NOISE).encode() for _ in range(rng.randint(*noise))] for _ in range(2))
        data = b"\n".join([*before, data.rstrip(b"\n"), *after]) + b"\n"
    filtered, every_line = parse_both(data, kind, chunk=chunk, **context)
    assert filtered.model_dump() == every_line.model_dump()
    assert not [p for p in filtered.problems if "parser error" in p], filtered.problems
    return filtered


def verdict_of(parsed: ParsedOutput, kind: str = BENCH, exit_code: int = 0) -> tuple[str, list[str]]:
    """The verdict and reasons of a run that exited ``exit_code`` and printed ``parsed``."""
    return verdict_and_reasons(
        RunRecord(ran=True, exit_code=exit_code), parsed, None, TargetRecord(name="t", kind=kind)
    )
