"""A real Triton kernel: elementwise add. `wrong=True` adds a bias on purpose (the FAIL case)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, bias, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y + bias, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, wrong: bool = False) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, 0.01 if wrong else 0.0, BLOCK=1024)
    return out
