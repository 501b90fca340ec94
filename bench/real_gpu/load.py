"""Keeps the GPU busy with bf16 matmuls for SECONDS (argv[1]), as another user's job would."""
import sys
import time

import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
print(f"load start {time.time():.3f}", flush=True)
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
print(f"load end {time.time():.3f}", flush=True)
