"""Many writers into one history store at once, on SQLite and on PostgreSQL: runs stored per second.

16 processes of ``gpuverify history add`` start together (as CI runners ending at once do; each has imported
the command before the start, so the time is the adds', not Python's start-up): each adds its own
four artifacts, its neighbour's four, and four that every writer adds, 192 adds of 68 distinct runs. The
same writers go into a new SQLite file and into a new PostgreSQL database (a private cluster started here,
as the tests do, or ``--url``); a reader exports the store throughout. Printed per backend: the wall time,
runs stored per second, adds per second, the reader's slowest answer, and that every run was stored
once (0 lost, 0 doubled); then one writer adding the same 68 runs alone, for the ratio.

    python bench/history_writers.py [--writers 16] [--url postgresql://...] [--save bench/results/history_writers.txt]
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from store_artifacts import never_ran  # noqa: E402

from pytest_gpuverify.history.db import connect, locate  # noqa: E402
from pytest_gpuverify.history.store import count  # noqa: E402

CLI = [sys.executable, "-m", "pytest_gpuverify.cli.main"]
# a writer process with its imports done before the start, so that the time is the adds', not Python's start
WRITER = """import sys, time
from pathlib import Path
from pytest_gpuverify.cli.main import main
import pytest_gpuverify.history.command, pytest_gpuverify.history.store, pytest_gpuverify.verify.check
print("ready", flush=True)
while not Path(sys.argv[1]).exists():
    time.sleep(0.005)
sys.stdout = open("/dev/null", "w")
raise SystemExit(main(sys.argv[2:]))
"""
READER = """import subprocess, sys, time
from pathlib import Path
stop, answers = Path(sys.argv[2]), []
while not stop.exists():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "history", "export", "--store",
                           sys.argv[1]], capture_output=True, text=True)
    answers.append((proc.returncode, time.monotonic() - start))
print(repr(answers))
"""


def at_once(store: str, folder: Path, writers: int) -> tuple[float, int, int, int, list]:
    """(wall seconds, adds, runs expected, writers that failed, the reader's (exit, seconds) answers)."""
    own = [[never_ran(folder, w * 4 + k) for k in range(4)] for w in range(writers)]
    shared = [never_ran(folder, 10_000 + k) for k in range(4)]
    with closing(connect(locate(store))):
        pass
    stop, go = folder / "stop", folder / "go"
    reader = subprocess.Popen([sys.executable, "-c", READER, store, str(stop)], stdout=subprocess.PIPE, text=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(go), "history", "add"]
            + [*map(str, shared + own[w] + own[(w + 1) % writers]), "--store", store],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for w in range(writers)
    ]
    for proc in procs:  # each has imported the command and waits for the start
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    go.touch()
    failed = sum(p.wait() != 0 for p in procs)
    wall = time.perf_counter() - start
    stop.touch()
    answers = ast.literal_eval(reader.communicate()[0])
    return wall, writers * 12, writers * 4 + 4, failed, answers


def alone(store: str, folder: Path, writers: int) -> float:
    paths = [str(folder / f"A{n}") for n in range(writers * 4)] + [str(folder / f"A{10_000 + k}") for k in range(4)]
    go = folder / "go-alone"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(go), "history", "add", *paths, "--store", store],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    go.touch()
    assert proc.wait() == 0
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--url", help="a PostgreSQL server's URL (its database 'postgres'); default: start one here")
    parser.add_argument("--save", help="write the lines here too")
    args = parser.parse_args()
    lines = []
    with ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if args.url:
            import psycopg

            def new_database(name: str) -> str:
                with psycopg.connect(args.url, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return args.url.rsplit("/", 1)[0] + "/" + name

        else:
            from postgres_cluster import running_cluster

            new_database = stack.enter_context(running_cluster()).create_database
        stores = {"sqlite": (str(base / "h.db"), str(base / "alone.db"))}
        stores["postgresql"] = (new_database(f"h_{uuid.uuid4().hex[:8]}"), new_database(f"a_{uuid.uuid4().hex[:8]}"))
        rates = {}
        for backend, (store, single) in stores.items():
            folder = base / backend
            wall, adds, expected, failed, answers = at_once(store, folder, args.writers)
            with closing(connect(locate(store))) as conn:
                stored = count(conn)
            one = alone(single, folder, args.writers)
            rates[backend] = expected / wall
            slowest = max((s for _, s in answers), default=0.0)
            lines.append(
                f"{backend}: {args.writers} writers at once, {adds} adds of {expected} runs in {wall:.2f} s: "
                f"{expected / wall:.1f} runs/s, {adds / wall:.1f} adds/s; stored {stored} of {expected} "
                f"({expected - stored} lost, {max(stored - expected, 0)} doubled), {failed} writer(s) failed; "
                f"reader: {len(answers)} answers, {sum(rc != 0 for rc, _ in answers)} failed, slowest {slowest:.2f} s; "
                f"one writer alone: {expected / one:.1f} runs/s (ratio at once / alone {one / wall:.2f})"
            )
        lines.append(f"postgresql / sqlite runs/s: {rates['postgresql'] / rates['sqlite']:.2f}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.append(f"machine: {os.cpu_count()} CPU(s), load average {load} at the end (each writer is a Python process)")
    text = "\n".join(lines)
    print(text)
    if args.save:
        Path(args.save).write_text(text + "\n")


if __name__ == "__main__":
    main()
