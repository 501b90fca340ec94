"""The plugin's own cost on one target, taken apart: the plugin run of one target, minus the same
command run bare, minus pytest's own start with the same plugins (`pytest -q --co` in an empty
folder). Runs interleaved, medians, in one run. Each plugin run's artifact timeline splits its
wall time into steps: process start -> collected (pytest's start, the plugin's configure, the
collection), collected -> pick, pick -> lock, lock -> command start, the command, command end ->
lock release, release -> process exit (the artifact's write, the session's end, the interpreter's).

    python bench/startup.py [--repeats 5] [--duration 0.5] [--other PATH]  # simulated ROCm host, --gpu-container none
    python bench/startup.py --runs RUNS.txt --tickets DIR        # breakdown of runs made elsewhere
                                                                  # (RUNS.txt: "<ticket> <t0> <t1>" lines)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostbench import COMMAND, make_host  # noqa: E402

from pytest_gpuverify.common.clock import parse_iso_utc  # noqa: E402

STEPS = (
    ("start", None, "collected"),
    ("to pick", "collected", "pick_started"),
    ("pick", "pick_started", "lock_taken"),
    ("set-up", "lock_taken", "command_started"),
    ("command", "command_started", "command_ended"),
    ("release", "command_ended", "lock_released"),
    ("to exit", "lock_released", None),
)


def breakdown(
    runs: list[tuple[str, float, float]], tickets: Path, start_s: float, paired: list[float] | None = None
) -> list[float]:
    """Print each run's steps (ms) and return its own work: wall - command - pytest's start (``paired``:
    the start timed right after each run, else ``start_s`` for all)."""
    own = []
    rows: dict[str, list[float]] = {name: [] for name, _, _ in STEPS}
    for n, (ticket, t0, t1) in enumerate(runs):
        art = next((tickets / ticket).glob("bench_*.json"))
        tl = json.loads(art.read_text())["timeline"]
        at = {k: parse_iso_utc(v) for k, v in tl.items() if v}
        for name, a, b in STEPS:
            rows[name].append((at.get(b, t1) if b else t1) - (at.get(a, t0) if a else t0))
        own.append(t1 - t0 - rows["command"][-1] - (paired[n] if paired else start_s))
    print(
        "steps of a plugin run, medians (ms): "
        + ", ".join(f"{name} {statistics.median(v) * 1000:.1f}" for name, v in rows.items())
    )
    start_text = (
        f"timed beside each run: {', '.join(f'{x:.3f}' for x in paired)} s"
        if paired
        else f"(median) {start_s * 1000:.1f} ms"
    )
    print(
        f"  pytest's own start with the same plugins {start_text}; the plugin's own work per run "
        f"(wall - command - that start): {', '.join(f'{x:.3f}' for x in own)} s"
    )
    q = statistics.quantiles(own, n=4) if len(own) > 1 else [own[0]] * 3
    print(f"  median {statistics.median(own):.3f} s (p25 {q[0]:.3f}, p75 {q[2]:.3f}) over {len(own)} runs")
    return own


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    t0 = time.time()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.time() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=float, default=0.5, help="the target command's sleep (s)")
    ap.add_argument("--other", help="another checkout's folder holding pytest_gpuverify/ (interleaved)")
    ap.add_argument(
        "--runs",
        help="breakdown only: a file of '<ticket> <t0> <t1> [<start s>]' lines (the last:\n"
        "pytest's start timed right after that run)",
    )
    ap.add_argument("--tickets", help="with --runs: the tickets folder")
    ap.add_argument("--start", type=float, default=None, help="with --runs: pytest's start (s)")
    args = ap.parse_args()
    if args.runs:
        lines = [line.split() for line in Path(args.runs).read_text().splitlines() if line.strip()]
        runs = [(a, float(b), float(c)) for a, b, c, *_ in lines]
        paired = [float(line[3]) for line in lines] if all(len(line) > 3 for line in lines) else None
        breakdown(runs, Path(args.tickets), args.start or 0.0, paired)
        return 0
    for tree in filter(None, [str(Path(__file__).resolve().parents[1]), args.other]):
        compileall.compile_dir(str(Path(tree) / "pytest_gpuverify"), quiet=1)  # as pip installs it
    root = Path(tempfile.mkdtemp(prefix="gv-startup-"))
    env_file, repo, sim = make_host(root, 1, 1, args.duration)
    (root / "empty").mkdir()
    trees = {"this tree": str(Path(__file__).resolve().parents[1]), **({"other": args.other} if args.other else {})}
    bare = ["sh", "-c", COMMAND, "t000", str(args.duration)]
    got = {name: {"plugin": [], "bare": [], "start": []} for name in trees}
    runs: dict[str, list] = {name: [] for name in trees}
    for i in range(args.repeats + 1):  # the first round warms up: page cache, the readings daemon of this user
        for n, (name, code) in enumerate(trees.items()):
            env = dict(
                os.environ,
                PATH=f"{sim}:{os.environ['PATH']}",
                ROCM_PATH=str(sim),
                GV_LEDGER=str(root / "ledger"),
                PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                PYTHONPATH=os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")])),
            )
            pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_gpuverify.plugin"]
            plugin = [*pytest, "--gpu-verify", "--gpu-container", "none", "--gpu-env", str(env_file), "gpuverify.toml"]
            ticket, t0 = f"S{n}-{i}", time.time()
            wall = timed([*plugin, "--ticket", ticket], repo, env)
            if i == 0:
                continue
            runs[name].append((ticket, t0, t0 + wall))
            got[name]["plugin"].append(wall)
            got[name]["bare"].append(timed(bare, repo, env))
            got[name]["start"].append(timed([*pytest, "--co"], root / "empty", env))
    for name in trees:
        m = {k: statistics.median(v) for k, v in got[name].items()}
        print(f"{name}: {trees[name]}")
        for k, v in got[name].items():
            print(f"  {k:<7} {m[k]:.3f} s   (all: {', '.join(f'{x:.3f}' for x in v)})")
        own = breakdown(runs[name], root / "tickets", m["start"])
        print(
            f"  plugin - bare - pytest start = {m['plugin'] - m['bare'] - m['start']:.3f} s (medians); "
            f"from the timelines {statistics.median(own):.3f} s  (the goal: <= 0.3 s on a real GPU)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
