"""The history store at scale: a store of 10,000 runs of one target (each its own commit, six perf rows,
a GPU watch record each; a 20% slowdown planted 60 commits before the newest), then ``gpuverify history
show`` and ``gpuverify report --history`` timed as the user runs them (subprocesses, the imports
included), the page's size, and the step fit's cost per row (fit and cache). With ``--base DIR`` (a
checkout of an older commit, e.g. ``git worktree add /tmp/base fe644d1``) the same commands of that
checkout are timed on the same store and the ratios printed (``--base-runs`` makes a smaller store for
it, the old code being slow).

    python bench/history_scale.py [--runs 10000] [--base DIR --base-runs 2000] [--save bench/results/history_scale.txt]

The targets it holds to: show < 2 s, report < 5 s and < 2 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.records import StoredRow, StoredRun
from pytest_gpuverify.records.artifact import Artifact, GpuClocks, GpuWatch, RunRecord, TargetRecord

ROOT = Path(__file__).resolve().parent.parent
TARGET = "gemm"
SHAPES = ("M=1, N=1280, K=8192", "M=128, N=1280, K=8192", "M=4096, N=4096, K=4096")
STEP_BEFORE_END = 60  # the slowdown's commit: this many before the newest


def run_record(n: int, runs: int) -> StoredRun:
    slow = 1.2 if n >= runs - STEP_BEFORE_END else 1.0
    rows = []
    for k, shape in enumerate(SHAPES):
        base = (10.0 + 5 * k) * slow
        us = [base * (1 + random.gauss(0, 0.004)) for _ in range(5)]
        tflops = [1000.0 / u for u in us]
        for metric, values, direction in (("us", us, "lower"), ("TFLOPS", tflops, "higher")):
            ordered = sorted(values)
            rows.append(
                StoredRow(
                    shape=shape,
                    name="us_median",
                    metric=metric,
                    direction=direction,
                    values=values,
                    median=ordered[2],
                    min=ordered[0],
                    max=ordered[-1],
                    cv=0.004,
                )
            )
    watch = [
        GpuWatch(
            run=r,
            backend="amdsmi",
            interval_s=0.5,
            samples=40,
            clocks=[GpuClocks(index=0, sm_mhz_min=2100.0, sm_mhz_max=2100.0)],
        )
        for r in range(1, 6)
    ]
    facts = {
        "target": f"{TARGET} (bench)",
        "gpu_model": "AMD Instinct MI300X",
        "gpu_arch": "gfx942",
        "image": "rocm/pytorch:rocm6.2",
        "torch": "2.4.0",
        "rocm": "6.2.0",
        "hip": "6.2",
        "triton": None,
    }
    minute, second = divmod(n, 60)
    hour, minute = divmod(minute, 60)
    return StoredRun(
        artifact_sha256=f"{n:064x}",
        artifact_path=f"/t/C{n}/bench_{TARGET}.json",
        target=TARGET,
        topic=TARGET,
        facts=facts,
        sha=hashlib.sha1(str(n).encode()).hexdigest(),
        ref="main",
        dirty=False,
        ts=f"2026-01-{1 + hour // 24:02d}T{hour % 24:02d}:{minute:02d}:{second:02d}Z",
        verdict="PASS",
        watch=watch,
        rows=rows,
    )


def build(store: Path, runs: int) -> None:
    from pytest_gpuverify.history.store import insert_many

    random.seed(37)
    with closing(connect(store)) as conn:
        for start in range(0, runs, 500):
            insert_many(conn, [run_record(n, runs) for n in range(start, min(runs, start + 500))])


def ticket(folder: Path) -> Path:
    """One artifact of the target (what `report` is given; its history comes from the store)."""
    folder.mkdir(parents=True, exist_ok=True)
    art = Artifact(
        topic=TARGET,
        ts="2026-02-01T00:00:00Z",
        verdict="PASS",
        host="mi300",
        run=RunRecord(ran=True),
        target=TargetRecord(name=TARGET, kind="bench"),
    )
    path = folder / f"bench_{TARGET}.json"
    path.write_text(art.model_dump_json(indent=2))
    return path


CPU: dict[str, float] = {}  # each command's CPU seconds (user + system): what a shared machine's load does not stretch


def timed(argv: list[str], code: Path, cache: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "XDG_CACHE_HOME": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *argv], capture_output=True, text=True, env=env, cwd=code
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return took, proc.stdout


def measure(code: Path, store: Path, tickets: Path, work: Path, tag: str) -> dict[str, float]:
    cache = work / f"cache-{tag}"
    page = work / f"report-{tag}.html"
    got: dict[str, float] = {}
    got["show (cold cache)"], out = timed(["history", "show", TARGET, "--store", str(store)], code, cache)
    got["show (cold cache) CPU"] = CPU["last"]
    got["show lines"] = len(out.splitlines())
    got["show (warm cache)"], _ = timed(["history", "show", TARGET, "--store", str(store)], code, cache)
    got["show (warm cache) CPU"] = CPU["last"]
    got["report (warm cache)"], _ = timed(
        ["report", str(tickets), "-o", str(page), "--history", "--store", str(store)], code, cache
    )
    got["report (warm cache) CPU"] = CPU["last"]
    got["report MB"] = page.stat().st_size / 1e6
    return got


def fit_costs() -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from cubic_fit import fit_boundaries_cubic

    from pytest_gpuverify.history import steps

    lines = []
    random.seed(7)
    for n in (50, 100, 200):
        series = [10.0 + random.random() * 0.05 for _ in range(n)]
        start = time.perf_counter()
        steps.fit_boundaries(series, 0.02)
        new = time.perf_counter() - start
        start = time.perf_counter()
        fit_boundaries_cubic(series, 0.02)
        old = time.perf_counter() - start
        lines.append(
            f"step fit, {n} commits: {new * 1e3:.1f} ms (the cubic fit: {old * 1e3:.0f} ms, ratio {old / new:.0f}x)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--base", default=None, help="a checkout of an older commit to time the same commands of")
    parser.add_argument("--base-runs", type=int, default=None, help="the store's size for --base (default --runs)")
    parser.add_argument("--save", default=None)
    args = parser.parse_args()
    lines = [f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = work / "history.db"
        start = time.perf_counter()
        build(store, args.runs)
        lines.append(
            f"store: {args.runs} runs of one target, {len(SHAPES) * 2} rows each: built in "
            f"{time.perf_counter() - start:.1f} s, {store.stat().st_size / 1e6:.1f} MB"
        )
        tickets = work / "T"
        ticket(tickets)
        here = measure(ROOT, store, tickets, work, "here")
        for name, value in here.items():
            lines.append(f"{name}: {value:.2f}" + (" s" if "MB" not in name and "lines" not in name else ""))
        ok = here["show (cold cache)"] < 2 and here["report (warm cache)"] < 5 and here["report MB"] < 2
        lines.append(f"targets (show < 2 s, report < 5 s and < 2 MB), wall: {'met' if ok else 'NOT met'}")
        ok = here["show (cold cache) CPU"] < 2 and here["report (warm cache) CPU"] < 5 and here["report MB"] < 2
        lines.append(f"targets, CPU seconds: {'met' if ok else 'NOT met'}")
        if args.base:
            small = store
            if args.base_runs and args.base_runs != args.runs:
                small = work / "small.db"
                build(small, args.base_runs)
            mine = measure(ROOT, small, tickets, work, "mine-small") if small != store else here
            base = measure(Path(args.base), small, tickets, work, "base")
            size = args.base_runs or args.runs
            lines.append(f"against {args.base} on a store of {size} runs (base / this):")
            for name in (
                "show (cold cache)",
                "show (cold cache) CPU",
                "report (warm cache)",
                "report (warm cache) CPU",
                "report MB",
                "show lines",
            ):
                lines.append(f"  {name}: {base[name]:.2f} / {mine[name]:.2f} = {base[name] / mine[name]:.1f}x")
    lines += fit_costs()
    lines.append(
        f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
        "(a shared machine: wall times stretch with the load)"
    )
    text = "\n".join(lines)
    print(text)
    if args.save:
        Path(args.save).write_text(text + "\n")


if __name__ == "__main__":
    main()
