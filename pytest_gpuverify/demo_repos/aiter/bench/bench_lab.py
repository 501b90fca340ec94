# A lab-style bench harness: per shape a time and a throughput, checked first, over a fixed number of
# timed steps. Its speed and run-to-run spread come from lab_config.py, which the A/B tests change
# between two commits. Each invocation counts itself (in /tmp, per checkout) so that runs 1, 2, 3 of
# one side print the middle, the high and the low value of its spread.
import hashlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from lab_config import FAIL_ON_RUN, SPEED, SPREAD, STEPS  # noqa: E402

here = pathlib.Path(__file__).resolve().parent
counter = pathlib.Path("/tmp") / ("gpuverify-lab-" + hashlib.sha1(str(here).encode()).hexdigest()[:12])
run = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(run))
wobble = (0.0, 1.0, -1.0)[(run - 1) % 3] * SPREAD

SHAPES = ((128, 4096, 4096, 100.0), (256, 4096, 4096, 180.0), (512, 8192, 4096, 610.0))
status = "failed" if run == FAIL_ON_RUN else "passed~"
print(f"[checkAllclose atol=0.01 rtol=0.01 {status}]")
print(f"steps: {STEPS}")
print("| m | n | k | us | TFLOPS |")
print("|--:|--:|--:|---:|---:|")
for m, n, k, base_us in SHAPES:
    us = base_us / SPEED * (1.0 + wobble)
    print(f"| {m} | {n} | {k} | {us:.3f} | {2 * m * n * k / (us * 1e-6) / 1e12:.3f} |")
