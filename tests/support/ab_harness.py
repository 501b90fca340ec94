"""A lab harness whose per-round times a test sets, and the lines it prints, for A/B sessions whose
artifacts `gpuverify compare` reads."""

from __future__ import annotations

# A lab-style harness: a correctness line, then its rows for A then B, one round per process: run i of a
# repeated target prints round i (it counts its invocations in /tmp); the head (B) prints `head[i]`, the
# base `base[i]`, and TFLOPS (higher is better) inverse to its time.
HARNESS = """import hashlib, pathlib
{check}
counter = pathlib.Path("/tmp") / ("gpuverify-cmp-" + hashlib.sha1(str(pathlib.Path(__file__).resolve()).encode()).hexdigest()[:12])
count = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(count + 1))
print("side    M      N      K   us_median    TFLOPS")
base = {base}
head = {head}
rounds = {rounds}
for rnd in (range(len(base)) if rounds else [count % len(base)]):
    for side in "AB":
        for m, scale in ((1, 1.0), (128, 4.0)):
            us = (base if side == "A" else head)[rnd] * scale
            print(f"{{side}}   {{m:4d}}   1280   8192   {{us:9.3f}}   {{1000.0 / us:8.3f}}")
"""


PASSED = 'print("[checkAllclose atol=0.01 rtol=0.01 passed~]")'


FAILED = 'print("[checkAllclose atol=0.01 rtol=0.01 failed!]")'


BASE = [10.0, 10.1, 9.9, 10.0, 10.05]
