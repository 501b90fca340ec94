"""Many sessions, few GPUs: never two commands on one GPU, no target lost, little time wasted.

12 pytest sessions x 20 declared targets on 4 simulated GPUs, all started at once on this host
(`--gpu-container none`); each target's command appends its visible GPU and start/end times to a
ledger. Prints overlaps (must be 0), lost targets (must be 0), and efficiency = ideal / actual, where
ideal = targets x duration / GPUs and actual = first start .. last end (target: within 15 %).

Then the same proof from the artifacts alone: every session's ticket folder is gathered into one,
`gpuverify check` over them must find 0 overlaps of lock intervals; a copy of one artifact moved onto
another run's lock interval on the same GPU must be named. `--keep DIR` leaves them (and the
hand-made pair) in DIR.

    python bench/contention.py [--procs 12] [--targets 20] [--gpus 4] [--duration 1.5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostbench import intervals, make_host, start_session  # noqa: E402


def gather(tickets: Path, dest: Path) -> list[Path]:
    """Every session's ticket folder (its artifacts and raw outputs) copied into ``dest`` under its own
    name (an artifact's key names its folder). Returns the copied folders."""
    dest.mkdir(parents=True, exist_ok=True)
    return [
        Path(shutil.copytree(ticket, dest / ticket.name))
        for ticket in sorted(p for p in tickets.iterdir() if p.is_dir())
    ]


def hand_made_overlap(folder: Path, dest: Path) -> tuple[str, str] | None:
    """A copy of one artifact whose lock interval is moved onto another run's on the same GPU, each in
    its ticket's folder under ``dest``. Returns (the copy's name, the victim's name)."""
    arts = [(p, json.loads(p.read_text())) for p in sorted(folder.glob("*/bench_*.json"))]
    arts = [(p, a) for p, a in arts if (a.get("timeline") or {}).get("lock_taken")]
    for victim_path, victim in arts:
        intruder = next(
            ((p, a) for p, a in arts if p != victim_path and a["gpu"]["index"] == victim["gpu"]["index"]), None
        )
        if intruder is None:
            continue
        path, art = intruder
        victim_dest, intruder_dest = dest / victim_path.parent.name, dest / path.parent.name
        for made in (victim_dest, intruder_dest):
            made.mkdir(parents=True, exist_ok=True)
        shutil.copy2(victim_path, victim_dest / victim_path.name)
        shutil.copy2(victim_path.parent / victim["raw_output"], victim_dest / victim["raw_output"])
        vt = victim["timeline"]
        art["timeline"].update(
            lock_taken=vt["lock_taken"],
            command_started=vt["command_started"],
            command_ended=vt["command_ended"],
            lock_released=vt["lock_released"],
        )
        name = "bench_hand-made-overlap.json"
        (intruder_dest / name).write_text(json.dumps(art, indent=2))
        shutil.copy2(path.parent / art["raw_output"], intruder_dest / art["raw_output"])
        return name, victim_path.name
    return None


def check_folder(*folders: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", *map(str, folders)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return proc.returncode, proc.stdout + proc.stderr


def prove_from_artifacts(tickets: Path, keep: Path) -> bool:
    folder = keep / "TICKET"
    gathered = gather(tickets, folder)
    n = sum(len(list(f.glob("bench_*.json"))) for f in gathered)
    rc, out = check_folder(*gathered)
    summary = [ln for ln in out.splitlines() if ln.startswith(("exclusivity:", "OVERLAP", "MISMATCH", "not in"))]
    print(f"gpuverify check {folder} ({n} artifacts): exit {rc}; " + " | ".join(summary))
    pair = hand_made_overlap(folder, keep / "HAND-MADE")
    if pair is None:
        print("no two runs on one GPU: no hand-made overlap to try")
        return rc == 0
    rc2, out2 = check_folder(*sorted((keep / "HAND-MADE").iterdir()))
    named = [ln for ln in out2.splitlines() if ln.startswith("OVERLAP")]
    moved = [ln for ln in out2.splitlines() if ln.startswith("MISMATCH timeline.")]  # its log's trailer disagrees
    print(f"hand-made pair ({pair[0]} moved onto {pair[1]}): exit {rc2}; " + " | ".join(named + moved))
    return rc == 0 and rc2 == 1 and len(named) == 1 and all(name in named[0] for name in pair)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=12)
    ap.add_argument("--targets", type=int, default=20)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--duration", type=float, default=1.5)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--keep", type=Path, help="leave the gathered artifacts (and the hand-made pair) here")
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
        print(
            f"ideal             : {ideal:.1f} s   actual (first start .. last end): {span:.1f} s   wall: {wall:.1f} s"
        )
        print(f"efficiency        : {ideal / span:.3f}  (actual/ideal {span / ideal:.3f}; target <= 1.15)")
        failed = [o for o in outputs if " passed" not in o.splitlines()[-1]] if outputs else []
        print(f"sessions not all passed: {len(failed)}")
        for out in failed[:2]:
            print(out[-1500:])
        proven = prove_from_artifacts(root / "tickets", args.keep or root / "kept")
        ok = overlaps == 0 and len(runs) == expected and span / ideal <= 1.15 and proven
        return 0 if ok else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
