"""A benchmark printed as FlagGems' benchmark suite prints one: the operator's header, a header of
columns two spaces and more apart over a rule of dashes, one row a size, timed on the GPU with
triton.testing.do_bench (Triton's add against torch's)."""

import sys

import torch
import triton

sys.path.insert(0, "op_tests/triton_tests")
from triton_add import add  # noqa: E402

for dtype in (torch.float16, torch.float32):
    print(f"Operator: add  Performance Test (dtype={dtype}, mode=kernel,level=core)")
    print(
        f"{'Status':<12}{'Torch Latency (ms)':>20}{'Gems Latency (ms)':>22}{'Gems Speedup':>20}{'TFLOPS':>15}"
        f"{'Size Detail':>16}"
    )
    print("-" * 106)
    for n in (1 << 16, 1 << 20, 1 << 24):
        x = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(n, device="cuda", dtype=dtype)
        torch_ms = triton.testing.do_bench(lambda x=x, y=y: x + y)
        gems_ms = triton.testing.do_bench(lambda x=x, y=y: add(x, y))
        tflops = n / (gems_ms * 1e-3) / 1e12
        print(
            f"{'SUCCESS':<12}{torch_ms:>20.6f}{gems_ms:>22.6f}{torch_ms / gems_ms:>20.3f}{tflops:>15.3f}"
            f"          [torch.Size([{n}]), torch.Size([{n}])]"
        )
    print()
