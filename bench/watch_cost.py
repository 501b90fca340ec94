"""The GPU watch's CPU cost per second of command (lease/watch.py), in one run per reader: a watch of
one held GPU runs for SECONDS while this process's main thread sleeps; the process's CPU time over that
span, less the same span's idle CPU time measured just before, is the watch's.

    python3 bench/watch_cost.py --seconds 10            # the simulated ROCm host: the tools and the library
    python3 bench/watch_cost.py --seconds 10 --nvml     # this machine's NVIDIA GPUs through NVML
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.execute.host_commands import LocalHost  # noqa: E402
from pytest_gpuverify.lease.watch import CommandWatch, OwnProcesses  # noqa: E402


def children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def cost(backend, seconds: float) -> tuple[float, int, float, list[str]]:
    """(CPU seconds per second of command, readings, interval, problems); the tools' own processes counted."""
    backend.read()  # the reader's start (NVML init, a tool's first call) is the session's, not the watch's
    idle0, kids0 = time.process_time(), children_cpu()
    time.sleep(1.0)
    idle = time.process_time() - idle0 + children_cpu() - kids0
    watch = CommandWatch(backend, [0], OwnProcesses(), lambda t: f"{t:.3f}")
    cpu0, kids0, wall0 = time.process_time(), children_cpu(), time.monotonic()
    watch.start()
    watch.on_start(["host", str(os.getpid())])
    time.sleep(seconds)
    record = watch.stop()
    span = time.monotonic() - wall0
    used = time.process_time() - cpu0 + children_cpu() - kids0 - idle * span
    return used / span, record.samples, record.interval_s or 0.0, record.problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--nvml", action="store_true", help="this machine's NVIDIA GPUs through NVML")
    args = parser.parse_args()
    rows = []
    if args.nvml:
        from pytest_gpuverify.gpu.nvidia import NvidiaBackend

        rows.append(("NVML", NvidiaBackend(LocalHost(), use_nvml=True)))
    else:
        from pytest_gpuverify.gpu.rocm import RocmBackend
        from pytest_gpuverify.simulator import SimState, install

        bin_dir = Path(tempfile.mkdtemp(prefix="gv-watch-")) / "sim"
        install(bin_dir, SimState.idle(8))
        env = {k: v for k, v in os.environ.items() if k not in ("GPUVERIFY_SIM_STATE", "ROCM_PATH")}
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        rows.append(("amd-smi tool (simulated)", RocmBackend(LocalHost(env=env), use_library=False)))
        rows.append(("amdsmi library (simulated)", RocmBackend(LocalHost(env=dict(env, ROCM_PATH=str(bin_dir))))))
    print(f"watch of 1 GPU for {args.seconds:g} s per reader")
    for name, backend in rows:
        per_s, samples, interval, problems = cost(backend, args.seconds)
        print(
            f"{name:28s} CPU {per_s * 1000:6.1f} ms per s of command ({per_s:.2%} of a core); "
            f"{samples} readings, interval {interval:.2f} s" + (f"; {problems}" if problems else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
