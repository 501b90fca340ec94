# A passing aiter-style op_test: JIT noise, passed~ checks, a markdown summary with two providers.
import aiter
from aiter import logger

aiter.report_environment()
aiter.jit_build("module_gemm_a8w8")
shapes = [(1, 1280, 8192), (32, 1280, 8192), (128, 1280, 8192)]
rows = []
for i, (m, n, k) in enumerate(shapes):
    ck, tr = 9.29366 + i, 10.0134 + 2 * i
    aiter.check_line("ck: ", "passed~")
    aiter.check_line("triton: ", "passed~")
    rows.append(f"| torch.bfloat16 | {m:5d} | {n:5d} | {k:5d} | {ck:9g} | {0:6g} | {tr:9g} | {0:6g} |")
table = [
    "| dtype          |     m |     n |     k |     ck us |   ck err |   triton us |   triton err |",
    "|:---------------|------:|------:|------:|----------:|---------:|------------:|-------------:|",
] + rows
logger.info("gemm_a8w8 summary (markdown):\n" + "\n".join(table))
