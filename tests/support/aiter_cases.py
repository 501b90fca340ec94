"""aiter op_test output as the parser tests write it: the check line's colours, JIT noise and a
markdown perf table."""

from __future__ import annotations

GREEN_PASSED = "\x1b[32mpassed~\x1b[0m"


YELLOW_WARNING = "\x1b[33mwarning!\x1b[0m"


RED_FAILED = "\x1b[31mfailed!\x1b[0m"


RED_CATASTROPHIC = "\x1b[31mcatastrophic!\x1b[0m"


JIT_NOISE = """\
[aiter] WARNING: NUMA balancing is enabled, which may cause errors. It is recommended to disable NUMA balancing
[aiter] [pid=4242 pname=MainProcess] start build [module_gemm_a8w8] under /opt/aiter/aiter/jit/build/module_gemm_a8w8
Successfully preprocessed all matching files.
[aiter] [pid=4242 pname=MainProcess] \x1b[32mfinish build [module_gemm_a8w8], cost 39.6s \x1b[0m
[aiter] import [module_aiter_enum] under /opt/aiter/aiter/jit/module_aiter_enum.so
[aiter] hipModuleLoad: /opt/aiter/hsa/gfx942/fmoe/fmoe_fp8_g1u1_subGU_128.co GetFunction: fmoe_fp8_g1u1 Success
[W527 04:47:30.915885614 collection.cpp:1100] Warning: ROCTracer produced duplicate flow start: 4 (function operator())
[aiter] type hints mismatch, override to --> wvSpltK(arg0: torch.Tensor, arg1: torch.Tensor, arg2: int) -> None
"""


# Real runs also print long lines (full warnings, kernel names, tensor reprs); they keep the big test fast.
LONG_NOISE = (
    "[aiter] WARNING: NUMA balancing is enabled, which may cause errors. It is recommended to disable NUMA balancing by "
    "running \"sudo sh -c 'echo 0 > /proc/sys/kernel/numa_balancing'\" for more details: "
    "https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi300x.html#disable-numa-auto-balancing\n"
    "[aiter] shape is M:16, N:1536, K:7168, found padded_M: 16, N:1536, K:7168 is tuned on cu_num = 304 in CKGEMM , "
    "kernel name is a8w8_blockscale_1x128x128_256x16x64x256_16x16_16x16_16x16x1_16x16x1_1x16x1x16_4_1x1_intrawave_v1!\n"
) * 4


def check_line(msg: str, status: str = GREEN_PASSED, atol: str = "0.01", rtol: str = "0.01") -> str:
    return f"[aiter] {msg}[checkAllclose atol={atol} rtol={rtol} {status}]"


MARKDOWN_GEMM = """\
[aiter] gemm_a8w8 summary (markdown):
| dtype          |     m |    n |    k |   ck us |   ck TFLOPS |   ck TB/s |   ck err |   asm us |   asm TFLOPS |   asm err |
|:---------------|------:|-----:|-----:|--------:|------------:|----------:|---------:|---------:|-------------:|----------:|
| torch.bfloat16 |    16 | 1536 | 7168 | 12.3457 |     28.5301 |   1.83621 |        0 |  9.87654 |      35.6625 |         0 |
| torch.bfloat16 |    32 | 1536 | 7168 | 13.0021 |     54.1893 |   1.75112 |        0 |  10.1234 |      69.5999 |  0.000122 |
| torch.bfloat16 |    64 | 1536 | 7168 | 15.8823 |     88.72   |   1.49988 |        0 |          |              |           |
"""
