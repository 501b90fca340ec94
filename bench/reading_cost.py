"""The reading's cost against a baseline checkout, in one run: the same outputs read by this tree and
by ``--base`` (a git revision, checked out in a temporary worktree), each read in a fresh child
process, the two interleaved round by round so that a busy moment hurts both alike.

Two workloads:

- **a 50 MB log** (``bench/parse.py``'s: realistic noise, then a 1 MB markdown summary table after a
  check line), read as ``aiter-op-test`` and as ``bench``; time and, for this tree, memory (the
  ``tracemalloc`` peak and the RSS growth);
- **a 64-target session's logs**: 64 outputs of the four kinds (each a valid output of its kind
  between about 2,000 lines of noise), read one after the other in one process, as a session reads
  its targets' outputs; the recognizers' import and first compile are warmed first (a session
  warms them while its first command runs), and reported apart.

Prints each figure's median over the rounds, this tree's over the base's (the ratio), and the goals:
ratio <= 1.10, memory < 64 MB.

    python bench/reading_cost.py --base b09d676 [--rounds 5] [--size-mb 50] [--save bench/results/reading_cost.txt]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from parse import MIB, generate, show_and_save  # noqa: E402
from parse_cases import NOISE, VALID  # noqa: E402

GOAL_RATIO = 1.10
GOAL_PEAK = 64 * MIB
SESSION_TARGETS = 64
NOISE_LINES = 2000

CHILD = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
try:
    from pytest_gpuverify.parsers.reader import parse_output
except ImportError:  # a checkout from before the reader
    from pytest_gpuverify.parsers.dispatch import parse_output
job = json.loads(sys.argv[2])
out = {}
if job["what"] == "log":
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if job.get("tracemalloc"):
        tracemalloc.start()
    t = time.perf_counter()
    result = parse_output(job["kind"], job["path"])
    out["seconds"] = time.perf_counter() - t
    if job.get("tracemalloc"):
        out["peak"] = tracemalloc.get_traced_memory()[1]
    out["rss_growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    out["perf"], out["passed"] = len(result.perf), result.correctness.passed
else:
    t = time.perf_counter()
    for kind, path in job["warm"]:
        parse_output(kind, path)
    out["warm_seconds"] = time.perf_counter() - t
    t = time.perf_counter()
    verdicts = []
    for kind, path in job["logs"]:
        verdicts.append(parse_output(kind, path).correctness.passed)
    out["seconds"] = time.perf_counter() - t
    out["passed"] = sum(v is True for v in verdicts)
print(json.dumps(out))
"""


def child(checkout: Path, job: dict) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), json.dumps(job)], capture_output=True, text=True, env=env
    )
    if proc.returncode:
        raise SystemExit(f"the child failed under {checkout}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def session_logs(folder: Path) -> list[tuple[str, str]]:
    """64 outputs of the four kinds, each a valid output between runs of noise."""
    rng = random.Random(64)
    kinds = ["aiter-op-test", "bench", "flydsl-pytest", "triton-pytest"]
    logs = []
    for i in range(SESSION_TARGETS):
        kind = kinds[i % len(kinds)]
        lines = [rng.choice(NOISE) for _ in range(NOISE_LINES // 2)] + VALID[kind].splitlines()
        lines += [rng.choice(NOISE) for _ in range(NOISE_LINES // 2)]
        path = folder / f"target_{i:02d}.log"
        path.write_text("\n".join(lines) + "\n")
        logs.append((kind, str(path)))
    return logs


def worktree(rev: str, where: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True, capture_output=True
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(where / "pytest_gpuverify")], check=True)
    return where


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size-mb", type=int, default=50)
    ap.add_argument("--save", type=Path)
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "pytest_gpuverify")], check=True)
    report = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="gv-reading-") as tmp:
        tmp_path = Path(tmp)
        base = worktree(args.base, tmp_path / "base")
        try:
            big = tmp_path / "big.log"
            size, rows = generate(big, args.size_mb * MIB)
            logs = session_logs(tmp_path)
            warm = [(kind, path) for kind, path in logs[:4]]
            jobs = {
                f"{args.size_mb} MB log, aiter-op-test": {"what": "log", "kind": "aiter-op-test", "path": str(big)},
                f"{args.size_mb} MB log, bench": {"what": "log", "kind": "bench", "path": str(big)},
                f"{SESSION_TARGETS}-target session": {"what": "session", "logs": logs, "warm": warm},
            }
            times: dict[tuple[str, str], list[float]] = {}
            warms: dict[str, list[float]] = {}
            results: dict[tuple[str, str], dict] = {}
            for _ in range(args.rounds):
                for name, job in jobs.items():
                    for side, checkout in (("base", base), ("this", ROOT)):
                        out = child(checkout, job)
                        times.setdefault((name, side), []).append(out["seconds"])
                        results[(name, side)] = out
                        if "warm_seconds" in out:
                            warms.setdefault(side, []).append(out["warm_seconds"])
            memory = child(ROOT, {**jobs[f"{args.size_mb} MB log, aiter-op-test"], "tracemalloc": True})
            with redirect_stdout(report):
                print(
                    f"reading cost: this tree vs {args.base}, median of {args.rounds} interleaved rounds; "
                    f"{size / MIB:.1f} MB log ({rows} table rows at its end); python {sys.version.split()[0]}, "
                    f"{os.cpu_count()} CPUs"
                )
                print()
                print(f"| {'what':34} | {'base s':>8} | {'this s':>8} | {'this/base':>9} | result (base / this) |")
                print(f"|{'-' * 36}|{'-' * 10}|{'-' * 10}|{'-' * 11}|----------------------|")
                worst = 0.0
                for name in jobs:
                    b, t = statistics.median(times[(name, "base")]), statistics.median(times[(name, "this")])
                    worst = max(worst, t / b)
                    rb, rt = results[(name, "base")], results[(name, "this")]
                    shown = (
                        f"{rb.get('perf', '-')} rows, passed {rb['passed']} / {rt.get('perf', '-')} rows, "
                        f"passed {rt['passed']}"
                    )
                    print(f"| {name:34} | {b:8.3f} | {t:8.3f} | {t / b:9.3f} | {shown} |")
                wb, wt = statistics.median(warms["base"]), statistics.median(warms["this"])
                print(
                    f"| {'import + first reading, 4 kinds':34} | {wb:8.3f} | {wt:8.3f} | {wt / wb:9.3f} | "
                    "(a session warms these while its first command runs) |"
                )
                print()
                peak = max(memory["peak"], memory["rss_growth"])
                print(
                    f"worst ratio {worst:.3f} (goal <= {GOAL_RATIO:.2f}: {'met' if worst <= GOAL_RATIO else 'NOT met'})"
                )
                print(
                    f"memory, {args.size_mb} MB log: tracemalloc peak {memory['peak'] / MIB:.1f} MB, RSS growth "
                    f"{memory['rss_growth'] / MIB:.1f} MB (goal < {GOAL_PEAK // MIB} MB: "
                    f"{'met' if peak < GOAL_PEAK else 'NOT met'})"
                )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    show_and_save(report, args.save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
