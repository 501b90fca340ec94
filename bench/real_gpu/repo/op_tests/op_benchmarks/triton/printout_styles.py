"""A real Triton kernel (elementwise add) checked against torch, its verdict printed in one of the
spellings harnesses use; the script itself exits 0 whatever it found (as many harnesses do).

    python3 printout_styles.py --style mismatch|bool|status|bracket|table [--wrong]
"""

import argparse
import sys

import torch

sys.path.insert(0, "op_tests/triton_tests")
from triton_add import add  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--style", required=True)
ap.add_argument("--wrong", action="store_true")
args = ap.parse_args()
rows = []
for n in (4096, 65536, 1 << 20):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = add(x, y, wrong=args.wrong)
    ref = x + y
    err = (out - ref).abs().max().item()
    ok = torch.allclose(out, ref, atol=1e-5, rtol=1e-5)
    rows.append((n, err, ok))
    if args.style == "mismatch":
        print(f"N={n}: max_abs_error={err:.6f}")
        print("match between triton and torch" if ok else f"MISMATCH between triton and torch for N={n}")
    elif args.style == "bool":
        print(f"N={n}")
        print(torch.allclose(out, ref, atol=1e-5, rtol=1e-5))
    elif args.style == "status":
        print(f"add N={n} status: {'PASS' if ok else 'FAIL'}")
    elif args.style == "bracket":
        print(f"[{'OK' if ok else 'FAIL'}] add N={n} max diff {err:.3e}")
if args.style == "table":
    print("| N | max diff | Correctness |")
    print("|---|---|---|")
    for n, err, ok in rows:
        print(f"| {n} | {err:.3e} | {'PASS' if ok else 'FAIL'} |")
