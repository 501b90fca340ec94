"""The dry run's CPU stand-in for test_allreduce.py (bench/real_gpu/many_gpu/mixlab.py --dry-run-sim
only): the same shape, one process per GPU the target was given (HIP_VISIBLE_DEVICES on the simulated
host), a sum across them through a pipe, held TP_HOLD_S seconds. It proves the orchestration (locks,
waits, packing, the sampler), not a GPU or NCCL."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

HOLD_S = float(os.environ.get("TP_HOLD_S", "3"))


def _rank(rank: int, conn) -> None:
    time.sleep(HOLD_S)  # the all-reduce's time on the GPUs
    conn.send((rank, rank + 1, os.environ.get("HIP_VISIBLE_DEVICES", "")))
    conn.close()


def test_cpu_sum_across_the_targets_gpus():
    visible = [v for v in os.environ.get("HIP_VISIBLE_DEVICES", "").split(",") if v]
    assert visible, "no GPU given"
    ctx = mp.get_context("fork")
    pipes = [ctx.Pipe(duplex=False) for _ in visible]
    procs = [ctx.Process(target=_rank, args=(r, w)) for r, (_, w) in enumerate(pipes)]
    for p in procs:
        p.start()
    got = sorted(r.recv() for r, _ in pipes)
    for p in procs:
        p.join()
    world = len(visible)
    assert sum(v for _, v, _ in got) == world * (world + 1) / 2
    print(f"cpu stand-in: {world} ranks on GPUs {','.join(visible)}")
