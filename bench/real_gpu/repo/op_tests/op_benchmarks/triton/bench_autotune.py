# A real @triton.autotune kernel (an add over 16M floats), its result checked and timed with do_bench:
# with TRITON_PRINT_AUTOTUNING=1 Triton prints its choice. autotune_configs.py holds the block sizes
# tried (the A/B script changes them between two commits); --cache-results keeps the choice in the
# Triton cache (cache_results=True), where the next run finds it and prints nothing.
import pathlib
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from autotune_configs import BLOCKS  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in BLOCKS for w in (2, 4, 8)]
extra = {"cache_results": True} if "--cache-results" in sys.argv else {}


@triton.autotune(configs=CONFIGS, key=["n"], **extra)
@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


n = 1 << 24
x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
out = torch.empty_like(x)
grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
add_kernel[grid](x, y, out, n)
print(f"status: {'PASS' if torch.allclose(out, x + y) else 'FAIL'}")
print(f"Perf: {triton.testing.do_bench(lambda: add_kernel[grid](x, y, out, n)):.4f} ms")
