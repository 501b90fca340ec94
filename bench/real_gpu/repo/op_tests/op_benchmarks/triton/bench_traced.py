"""Triton's tutorial kernels (vector add, a blocked matmul), checked against torch, then each shape timed
in a loop of launches between two CUDA events: the time a call is the loop's time over its launches
(the kernel plus its launch gap). ``--timer-divisor 10`` is a planted timer patch: the harness divides
what it measured before printing it, as a reward-hacked harness would; the kernels run as long as ever.

    python3 bench_traced.py add|matmul [--timer-divisor D]
"""

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm, rn, rk = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K))
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N))
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


def matmul(a, b):
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float16)
    matmul_kernel[(triton.cdiv(m, 128), triton.cdiv(n, 128))](a, b, c, m, n, k, BM=128, BN=128, BK=32)
    return c


def time_a_call(fn, steps):
    """The loop's time over its launches, in microseconds (CUDA events around ``steps`` calls)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("op", choices=["add", "matmul"])
    parser.add_argument("--timer-divisor", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    rows, ok = [], True
    if args.op == "add":
        for n in (1 << 20, 1 << 22, 1 << 24, 1 << 26):
            x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
            ok &= torch.allclose(add(x, y), x + y)
            us = time_a_call(lambda x=x, y=y: add(x, y), args.steps) / args.timer_divisor
            rows.append((f"{n}", us, 3 * n * 4 / (us * 1e-6) / 1e9, "GB/s"))
    else:
        for m in (1024, 2048, 4096):
            a = torch.randn((m, m), device="cuda", dtype=torch.float16)
            b = torch.randn((m, m), device="cuda", dtype=torch.float16)
            ok &= torch.allclose(matmul(a, b), a @ b, atol=0.5, rtol=1e-2)
            us = time_a_call(lambda a=a, b=b: matmul(a, b), args.steps) / args.timer_divisor
            rows.append((f"{m}", us, 2 * m**3 / (us * 1e-6) / 1e12, "TFLOPS"))
    print(f"[checkAllclose atol=0.01 rtol=0.01 {'passed~' if ok else 'failed!'}]")
    print(f"steps: {args.steps}")
    print(f"| size | us | {rows[0][3]} |")
    print("|--:|---:|---:|")
    for size, us, rate, _ in rows:
        print(f"| {size} | {us:.3f} | {rate:.3f} |")


if __name__ == "__main__":
    main()
