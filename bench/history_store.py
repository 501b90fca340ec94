"""The history store's costs, as ratios within one run:

- writers: N runs imported by one process, against the same N split over two processes writing one
  file at once (SQLite's lock queues them: the ratio says what waiting costs; none may be lost);
- the step fit on 50, 100 and 200 commits (200 is the most it looks at).

    python bench/history_store.py [--runs 2000] [--save bench/results/history_store.txt]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.records import StoredRow, StoredRun
from pytest_gpuverify.history.steps import find_steps


def record(n: int, part: int) -> str:
    values = [10.0 + random.random() * 0.05 for _ in range(5)]
    rows = [
        StoredRow(
            shape=f"M={m}",
            name="us_median",
            metric=metric,
            direction="lower",
            values=values,
            median=sorted(values)[2],
            min=min(values),
            max=max(values),
            cv=0.002,
        )
        for m in (1, 128)
        for metric in ("us", "TFLOPS")
    ]
    return StoredRun(
        artifact_sha256=f"{part:02x}{n:062x}",
        artifact_path=f"/t/C{n}/bench_x.json",
        target="x",
        topic="x",
        facts={"target": "x (bench)"},
        sha=f"{n:040x}",
        ref="main",
        ts=f"2026-01-01T00:{n:06d}Z",
        verdict="PASS",
        rows=rows,
    ).model_dump_json()


def importing(store: Path, files: list[Path]) -> float:
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest_gpuverify.cli.main", "history", "import", str(f), "--store", str(store)],
            stdout=subprocess.DEVNULL,
        )
        for f in files
    ]
    assert all(p.wait() == 0 for p in procs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--save", default=None)
    args = parser.parse_args()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        halves = [base / "a.jsonl", base / "b.jsonl"]
        for k, half in enumerate(halves):
            half.write_text("".join(record(n, k) + "\n" for n in range(args.runs // 2)))
        whole = base / "all.jsonl"
        whole.write_text(halves[0].read_text() + halves[1].read_text())
        one = importing(base / "one.db", [whole])
        two = importing(base / "two.db", halves)
        with closing(connect(base / "two.db")) as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM runs").scalar()
        lines.append(
            f"writers: {args.runs} runs by one process {one:.2f} s, by two at once {two:.2f} s "
            f"(ratio {two / one:.2f}); stored {stored} of {args.runs}"
        )
    for n in (50, 100, 200):
        series = [10.0 + random.random() * 0.05 for _ in range(n)]
        start = time.perf_counter()
        find_steps(series, "lower")
        lines.append(f"step fit, {n} commits: {(time.perf_counter() - start) * 1e3:.0f} ms")
    text = "\n".join(lines)
    print(text)
    if args.save:
        Path(args.save).write_text(text + "\n")


if __name__ == "__main__":
    main()
