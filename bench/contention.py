"""Many sessions, few GPUs: never two commands on one GPU, no target lost, little time wasted.

12 pytest sessions x 20 declared targets on 4 simulated GPUs, all started at once on this host
(`--gpu-container none`); each target's command appends its visible GPU and start/end times to a
ledger. Prints overlaps (must be 0), lost targets (must be 0), and efficiency = ideal / actual, where
ideal = targets x duration / GPUs and actual = first start .. last end (target: within 15 %).

    python bench/contention.py [--procs 12] [--targets 20] [--gpus 4] [--duration 1.5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostbench import intervals, make_host, start_session  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=12)
    ap.add_argument("--targets", type=int, default=20)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--duration", type=float, default=1.5)
    ap.add_argument("--window", type=float, default=1.0)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gv-contention-"))
    try:
        env, repo, sim = make_host(root, args.gpus, args.targets, args.duration)
        ledger = root / "ledger.txt"
        ledger.touch()
        t0 = time.time()
        procs = [start_session(env, repo, sim, ledger, f"C{i:02d}", args.window) for i in range(args.procs)]
        outputs = [p.communicate()[0].decode(errors="replace") for p in procs]
        wall = time.time() - t0
        runs = intervals(ledger)
        expected = args.procs * args.targets
        overlaps = 0
        for gpu in sorted({r[0] for r in runs}):
            mine = sorted((s, e) for g, s, e, _ in runs if g == gpu)
            overlaps += sum(1 for (s1, e1), (s2, e2) in zip(mine, mine[1:]) if s2 < e1)
        span = max(e for _, _, e, _ in runs) - min(s for _, s, _, _ in runs) if runs else float("nan")
        ideal = expected * args.duration / args.gpus
        per_gpu = {g: sum(1 for r in runs if r[0] == g) for g in sorted({r[0] for r in runs})}
        print(f"{args.procs} sessions x {args.targets} targets on {args.gpus} simulated GPUs, {args.duration:g} s each")
        print(f"runs on each GPU  : {per_gpu}")
        print(f"overlaps          : {overlaps}   (must be 0)")
        print(f"lost              : {expected - len(runs)} of {expected}   (must be 0)")
        print(f"ideal             : {ideal:.1f} s   actual (first start .. last end): {span:.1f} s   wall: {wall:.1f} s")
        print(f"efficiency        : {ideal / span:.3f}  (actual/ideal {span / ideal:.3f}; target <= 1.15)")
        failed = [o for o in outputs if " passed" not in o.splitlines()[-1]] if outputs else []
        print(f"sessions not all passed: {len(failed)}")
        for out in failed[:2]:
            print(out[-1500:])
        ok = overlaps == 0 and len(runs) == expected and span / ideal <= 1.15
        return 0 if ok else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
