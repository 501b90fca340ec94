"""How fast a waiting session takes a GPU that another session lets go of.

Several sessions queue for one simulated GPU (`--gpu-wait`, `--gpu-container none`), twice: reading
the GPU through the simulated amdsmi library in-process (ROCM_PATH at the simulator, as a ROCm
install keeps it under /opt/rocm/share/amd_smi), then through the simulated amd-smi tool (a host
without the library). With ``--real ARCH``: GPU 0 of this host's real GPUs, its own readings (NVML
on NVIDIA). Each target's command writes its start and end times to a ledger. The delay of a
handoff is the next command's start minus the previous command's end: it holds the previous
command's exit, the lock release, the waiter taking it (blocked on the lock: lockwait.py), its re-check of the
GPU under the lock (one reading: reported apart), its command's start and that command's guard.
Prints median and p95 (target: median < 10 ms) and each step's median from the artifacts' timelines.

    python bench/handoff.py [--sessions 4] [--targets 6] [--duration 0.3] [--real sm_90]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostbench import intervals, make_host, median, pct, start_session  # noqa: E402


def reading_cost(host_env: dict | None, arch: str | None, repeats: int = 15) -> float:
    """The median time of one GPU reading as the sessions read (the re-check under the lock)."""
    from pytest_gpuverify.execute.host_commands import LocalHost
    from pytest_gpuverify.gpu import select_backend

    backend = select_backend(arch or "gfx942", LocalHost(env=host_env))
    backend.read()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        backend.read()
        times.append(time.perf_counter() - t)
    return median(times)


def breakdown(tickets: Path, runs: list[tuple[float, float]]) -> dict[str, float]:
    """Median of each step of a handoff, from the artifacts' timelines and the ledger: the previous
    command's exit seen by its session, its lock released, the next session's lock taken (the
    waiter), its command started (re-check under the lock, the run's set-up), its command's first
    line (process start)."""
    import json

    from pytest_gpuverify.common.clock import parse_iso_utc

    tls = []
    for path in tickets.glob("*/bench_*.json"):
        tl = json.loads(path.read_text()).get("timeline") or {}
        if all(tl.get(k) for k in ("lock_taken", "command_started", "command_ended", "lock_released")):
            tls.append(
                {k: parse_iso_utc(tl[k]) for k in ("lock_taken", "command_started", "command_ended", "lock_released")}
            )
    tls.sort(key=lambda t: t["lock_taken"])
    starts = sorted(s for s, _ in runs)
    ends = sorted(e for _, e in runs)
    steps: dict[str, list[float]] = {k: [] for k in ("exit seen", "release", "lock taken", "set-up", "process start")}
    for i in range(1, min(len(tls), len(runs))):
        prev, cur = tls[i - 1], tls[i]
        steps["exit seen"].append(prev["command_ended"] - ends[i - 1])
        steps["release"].append(prev["lock_released"] - prev["command_ended"])
        steps["lock taken"].append(cur["lock_taken"] - prev["lock_released"])
        steps["set-up"].append(cur["command_started"] - cur["lock_taken"])
        steps["process start"].append(starts[i] - cur["command_started"])
    return {k: median(v) for k, v in steps.items() if v}


def queue(args, root: Path, library: bool) -> tuple[list[float], int, float, dict[str, float]]:
    """(handoff delays, runs, one reading's cost, median of each step) of sessions queued on one GPU."""
    env, repo, sim = make_host(root, 1, args.targets, args.duration, real_arch=args.real)
    extra = {"ROCM_PATH": str(sim)} if library and sim else {}
    ledger = root / "ledger.txt"
    ledger.touch()
    procs = [start_session(env, repo, sim, ledger, f"H{i}", args.window, extra_env=extra) for i in range(args.sessions)]
    for p in procs:
        p.communicate()
    runs = sorted((s, e) for _, s, e, _ in intervals(ledger))
    delays = [b[0] - a[1] for a, b in zip(runs, runs[1:])]
    host_env = dict(os.environ, PATH=f"{sim}:/usr/bin:/bin", **extra) if sim else None
    return delays, len(runs), reading_cost(host_env, args.real), breakdown(root / "tickets", runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--targets", type=int, default=6)
    ap.add_argument("--duration", type=float, default=0.3)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--real", metavar="ARCH", help="queue for this host's real GPU 0 (arch as the Hosts row says)")
    args = ap.parse_args()
    expected = args.sessions * args.targets
    # The simulated host twice: readings by the amd-smi tool, and by the amdsmi library in-process
    # (ROCM_PATH at the simulator, as ROCm installs keep it under /opt/rocm/share/amd_smi).
    modes = [("real", False)] if args.real else [("amdsmi library", True), ("amd-smi tool", False)]
    ok = True
    for name, library in modes:
        root = Path(tempfile.mkdtemp(prefix="gv-handoff-"))
        try:
            delays, runs, read_s, steps = queue(args, root, library)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        gpu = f"real GPU 0 ({args.real})" if args.real else f"1 simulated GPU, readings by the {name}"
        print(
            f"{args.sessions} sessions x {args.targets} targets queued on {gpu}: {len(delays)} handoffs, "
            f"runs {runs} of {expected}, overlaps {sum(1 for d in delays if d < 0)}"
        )
        print(
            f"  handoff delay   median {median(delays) * 1000:6.1f} ms   p95 {pct(delays, 95) * 1000:6.1f} ms   "
            f"max {max(delays) * 1000:6.1f} ms   (target: median < 10 ms)"
        )
        print(
            f"  of which one GPU reading (re-check under the lock): {read_s * 1000:.1f} ms median; "
            f"handoff without it: median {(median(delays) - read_s) * 1000:.1f} ms"
        )
        print(
            "  steps (medians, from the artifacts' timelines): "
            + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in steps.items())
        )
        ok = ok and median(delays) < 0.010 and runs == expected
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
