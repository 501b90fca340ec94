"""What a first run costs a new user: ``scripts/demo.sh`` on a fresh clone, the old way (install the
package with its test tools, ``.[test]``: ruff, mypy, mkdocs, hypothesis, the team extra's server) against
the new (the runtime only, ``.``), each in a fresh clone and a fresh virtual environment, timed from the
venv's creation to the demo's end. Prints each phase's seconds per way and the ratio new / old, in one
run. The goal: under 0.5.

    python bench/demo_time.py [--rounds 1] [--root CHECKOUT] [--out bench/results/demo_time.txt]

Both ways read the same pip configuration (here a local index and wheel folder) and the same warm pip
cache: a warm-up round, not timed, installs both ways once (and runs the demo once, so that the
simulated host's container image is built before either way is timed). The rounds alternate which way
goes first. Needs Docker Engine (``bash scripts/ensure-docker.sh``) and git.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
WAYS = {"old": ".[test]", "new": "."}


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} (in {cwd}) exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-2000:]}")
    return took


def first_run(root: Path, spec: str, work: Path, demo: bool = True) -> dict[str, float]:
    """Seconds of each phase of one first run: clone, venv, install ``spec``, the demo."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clone, venv = work / "clone", work / "venv"
    times = {"clone": run(["git", "clone", "-q", "--no-hardlinks", str(root), str(clone)], work, env)}
    times["venv"] = run([sys.executable, "-m", "venv", str(venv)], work, env)
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    times["install"] = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", spec], clone, env)
    if demo:
        times["demo"] = run([str(venv / "bin" / "gpuverify"), "demo", "--dir", ".demo"], clone, env)
    print(f"  {work.name} ({spec}): " + ", ".join(f"{p} {s:.1f} s" for p, s in times.items()), file=sys.stderr)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout to clone (its committed HEAD)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    run(["bash", str(HERE / "scripts" / "ensure-docker.sh")], HERE, dict(os.environ))
    results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="demo-time-") as tmp:
        for way, spec in WAYS.items():  # warm-up: pip's cache and the container image, not timed
            (Path(tmp) / f"warm-{way}").mkdir()
            first_run(args.root, spec, Path(tmp) / f"warm-{way}", demo=way == "new")
        for r in range(args.rounds):
            order = list(WAYS) if r % 2 == 0 else list(reversed(WAYS))
            for way in order:
                work = Path(tmp) / f"{way}-{r}"
                work.mkdir()
                results[way].append(first_run(args.root, WAYS[way], work))
    lines = [
        f"demo_time: {platform.node()} {platform.python_version()}, {args.rounds} round(s), "
        f"clone of {args.root}, pip cache warm for both ways",
    ]
    totals = {}
    for way, spec in WAYS.items():
        phases = {p: statistics.median(t[p] for t in results[way]) for p in results[way][0]}
        totals[way] = statistics.median(sum(t.values()) for t in results[way])
        detail = ", ".join(f"{p} {s:.1f} s" for p, s in phases.items())
        lines.append(f"  {way} (install -e '{spec}' + demo): {totals[way]:.1f} s total ({detail})")
    lines.append(f"  ratio new / old: {totals['new'] / totals['old']:.2f} (goal: under 0.5)")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
