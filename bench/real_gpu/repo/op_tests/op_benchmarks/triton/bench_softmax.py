"""Triton's fused softmax (the tutorial kernel), checked against torch, then timed with perf_report."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out


x = torch.randn(4096, 1024, device="cuda")
ref, got = torch.softmax(x, dim=-1), softmax(x)
err = (got - ref).abs().max().item()
cos = torch.nn.functional.cosine_similarity(got.flatten(), ref.flatten(), dim=0).item()
print(f"softmax: max_abs_error={err:.3e} cosine_sim={cos:.6f}")
status = "passed~" if torch.allclose(got, ref, atol=1e-5, rtol=1e-3) else "failed!"
print(f"[checkAllclose atol=1e-05 rtol=0.001 {status}]")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[256 * i for i in range(2, 18, 3)],
        line_arg="provider",
        line_vals=["triton", "torch"],
        line_names=["Triton", "Torch (native)"],
        ylabel="GB/s",
        plot_name="softmax-performance",
        args={"M": 4096},
    )
)
def benchmark(M, N, provider):
    x = torch.randn(M, N, device="cuda", dtype=torch.float32)
    fn = (lambda: softmax(x)) if provider == "triton" else (lambda: torch.softmax(x, axis=-1))
    ms = triton.testing.do_bench(fn)
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


benchmark.run(print_data=True)
