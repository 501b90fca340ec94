# A lab harness whose kernels a tracer can see: per shape a warm-up and a timed loop of one kernel at one
# grid, then a table of the time a call. TIMER_DIVISOR in traced_config.py is a planted timer patch: the
# harness divides what it measured before printing it (the kernels ran as long as ever).
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from traced_config import KERNEL_VARIANT, STEPS, TIMER_DIVISOR  # noqa: E402

import aiter  # noqa: E402

SHAPES = ((128, 4096, 4096, 100.0), (256, 4096, 4096, 180.0), (512, 8192, 4096, 610.0))
aiter.triton_cache_entry("gemm_kernel", KERNEL_VARIANT)
print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print(f"steps: {STEPS}")
print("| m | n | k | us | TFLOPS |")
print("|--:|--:|--:|---:|---:|")
for m, n, k, base_us in SHAPES:
    grid = (m // 64 * 256, n // 64, 1)
    aiter.sim_launch("gemm_kernel", grid, base_us * 1.3)  # the warm-up compiles and checks
    aiter.sim_launch("fill_buffer", (1024, 1, 1), 4.0)  # a one-off: no timing loop
    took = [base_us * (1.0 + 0.002 * (i % 5)) for i in range(STEPS)]
    for us in took:
        aiter.sim_launch("gemm_kernel", grid, us)
    # the time a call as measured around the loop: the kernel plus its launch gap
    us = (statistics.median(took) + 2.0) / TIMER_DIVISOR
    print(f"| {m} | {n} | {k} | {us:.3f} | {2 * m * n * k / (us * 1e-6) / 1e12:.3f} |")
