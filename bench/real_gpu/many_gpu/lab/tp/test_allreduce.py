"""A tensor-parallel kernel test: one process per GPU of the target (rank r on the r-th GPU that
CUDA_VISIBLE_DEVICES names), an NCCL all-reduce through torch.distributed, the sum checked exactly,
then timed for TP_HOLD_S seconds and its bus bandwidth printed. torch is imported in the test, so
`pytest --collect-only` works where torch is not installed."""

from __future__ import annotations

import os
import socket
import time

HOLD_S = float(os.environ.get("TP_HOLD_S", "8"))
N = 64 << 20  # floats: 256 MiB a rank


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, results) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)  # the rank-th visible GPU: the engine lists the target's GPUs in order
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        x = torch.full((N,), float(rank + 1), device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        want = world * (world + 1) / 2
        ok = bool(torch.all(x == want).item())
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < HOLD_S:
            dist.all_reduce(x)
            steps += 1
            if steps % 10 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        secs = (time.perf_counter() - t0) / max(steps, 1)
        busbw = 2 * (world - 1) / world * N * 4 / secs / 1e9
        uuid = str(getattr(torch.cuda.get_device_properties(rank), "uuid", "?"))
        results.put((rank, ok, busbw, steps, uuid, os.environ.get("CUDA_VISIBLE_DEVICES", "")))
    finally:
        dist.destroy_process_group()


def test_nccl_all_reduce_sums_across_the_targets_gpus():
    import torch
    import torch.multiprocessing as mp

    world = torch.cuda.device_count()
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v]
    assert world == len(visible) >= 1, f"{world} GPUs seen, CUDA_VISIBLE_DEVICES={visible}"
    for var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        print(f"{var}={os.environ.get(var)}")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, world, port, results)) for r in range(world)]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    print("| rank | GPU uuid | steps | bus GB/s |")
    print("|---|---|---|---|")
    for rank, _ok, busbw, steps, uuid, _ in got:
        print(f"| {rank} | {uuid} | {steps} | {busbw:.1f} |")
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert [r for r, *_ in got] == list(range(world)) and all(ok for _, ok, *_ in got)
