# A frozen hill-climb harness that interleaves A and B itself and prints a side per row.
import itertools

print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("| side | m | n | us |")
print("|:-----|--:|--:|---:|")
for rep, side in itertools.product(range(2), "AB"):
    us = 10.5 + rep * 0.1 + (0.0 if side == "A" else -1.25)
    print(f"| {side} | 128 | 4096 | {us:g} |")
