"""A Triton fp16 matmul whose tile (BLOCK_M = BLOCK_N) comes from block_config.py, checked against
torch, then timed with perf_report (TFLOPS; torch's own matmul beside it, which the tile never touches)."""

import pathlib
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from block_config import BLOCK  # noqa: E402

BLOCK_K = 32


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(
            tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0),
            tl.load(b, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0),
        )
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BM=BLOCK,
        BN=BLOCK,
        BK=BLOCK_K,
    )
    return c


torch.manual_seed(0)
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
ref, got = torch.matmul(a, b), matmul(a, b)
err = (got.float() - ref.float()).abs().max().item()
cos = torch.nn.functional.cosine_similarity(got.float().flatten(), ref.float().flatten(), dim=0).item()
print(f"matmul BLOCK={BLOCK}: max_abs_error={err:.3e} cosine_sim={cos:.6f}")
status = "passed~" if torch.allclose(got, ref, atol=0.1, rtol=0.01) else "failed!"
print(f"[checkAllclose atol=0.1 rtol=0.01 {status}]")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[1024, 2048, 4096],
        line_arg="provider",
        line_vals=["triton", "torch"],
        line_names=["Triton", "Torch"],
        ylabel="TFLOPS",
        plot_name="matmul-performance",
        args={},
    )
)
def benchmark(N, provider):
    x = torch.randn(N, N, device="cuda", dtype=torch.float16)
    y = torch.randn(N, N, device="cuda", dtype=torch.float16)
    fn = (lambda: matmul(x, y)) if provider == "triton" else (lambda: torch.matmul(x, y))
    ms = triton.testing.do_bench(fn)
    return 2 * N**3 * 1e-12 / (ms * 1e-3)


benchmark.run(print_data=True)
