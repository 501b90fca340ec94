"""Keeps every visible GPU busy with bf16 matmuls for SECONDS (argv[1]), as another user's job would."""

import sys
import time

import torch

mats = [torch.randn(8192, 8192, device=f"cuda:{i}", dtype=torch.bfloat16) for i in range(torch.cuda.device_count())]
end = time.time() + float(sys.argv[1])
print(f"load start {time.time():.3f} on {len(mats)} GPU(s)", flush=True)
while time.time() < end:
    for _ in range(20):
        for a in mats:
            a @ a
    for i in range(len(mats)):
        torch.cuda.synchronize(i)
print(f"load end {time.time():.3f}", flush=True)
