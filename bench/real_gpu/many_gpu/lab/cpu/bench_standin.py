"""The dry run's CPU stand-in for a one-GPU Triton target: holds its GPU's lock HOLD seconds (argv[1])
and prints a perf table and a passing check, as bench_softmax.py does on a GPU."""

import sys
import time

hold = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
t0 = time.perf_counter()
time.sleep(hold)
print("softmax: max_abs_error=0.000e+00 cosine_sim=1.000000")
print("[checkAllclose atol=1e-05 rtol=0.001 passed~]")
print("       N     Triton      Torch")
print(f"0  1024.0  {hold * 100:.1f}  {hold * 90:.1f}")
print(f"held {time.perf_counter() - t0:.2f} s")
