"""Many writers into one history store at once: 16 into PostgreSQL through the ingest service, the same 16
straight into SQLite (and straight into PostgreSQL, for the service's cost): runs stored per second.

16 writer processes start together (as CI runners ending at once do): ``--sessions`` of them (default 4) are
pytest sessions on the simulated host (a bench target each, its own ticket, ``--gpu-history`` at the store
or the service), the rest ``gpuverify history add`` (each has imported the command before the start, so the
time is the adds', not Python's start-up): each adds its own four artifacts, its neighbour's four, and four
that every writer adds. A reader reads the runs throughout through the same interface the commands use
(the store, or the service's GET /v1/runs), its answers timed. Printed per way in: the wall time, runs
stored per second, that every run was stored once (0 lost, 0 doubled), the reader's answers and latency;
then one writer adding alone into a new store, for the ratio.

    python bench/history_writers.py [--writers 16] [--sessions 4] [--url postgresql://...]
                                    [--save bench/results/history_writers.txt]
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
from pytest_gpuverify.history.store import count, runs  # noqa: E402

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
READER = """import sys, time
from contextlib import closing
from pathlib import Path
from pytest_gpuverify.history.reader import open_reader
from pytest_gpuverify.history.db import locate
stop, answers = Path(sys.argv[2]), []
while not stop.exists():
    start = time.monotonic()
    try:
        with closing(open_reader(locate(sys.argv[1]))) as reader:
            answers.append((0, len(reader.runs(watch=False)), time.monotonic() - start))
    except Exception as exc:
        answers.append((1, repr(exc), time.monotonic() - start))
print(repr(answers))
"""
TOKEN = "bench-runner-token-0123456789abcdef"


def sessions_at_once(box, store: str, n: int, tag: str, env: dict) -> list[subprocess.Popen]:
    """``n`` pytest sessions on the simulated host (``box``), each its own ticket, each adding its artifact."""
    return [
        box.pytest(
            "op_tests/test_rmsnorm2d.py",
            "--gpu-container",
            "none",
            f"--gpu-history={store}",
            ticket=f"{tag}-{k}",
            env=env,
            popen=True,
        )
        for k in range(n)
    ]


def at_once(store: str, folder: Path, writers: int, sessions: int, box, env: dict) -> dict:
    """Every writer at once into ``store`` (a file, a URL of a database or of the service); what happened."""
    adders = writers - sessions
    own = [[never_ran(folder, w * 4 + k) for k in range(4)] for w in range(adders)]
    shared = [never_ran(folder, 10_000 + k) for k in range(4)]
    stop, go = folder / "stop", folder / "go"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, store, str(stop)], stdout=subprocess.PIPE, text=True, env=env
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(go), "history", "add"]
            + [*map(str, shared + own[w] + own[(w + 1) % adders]), "--store", store],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(adders)
    ]
    for proc in procs:  # each has imported the command and waits for the start
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    go.touch()
    own_env = {k: env[k] for k in ("GPUVERIFY_HISTORY_TOKEN", "PYTHONPATH")}  # the sandbox's PATH kept
    ran = sessions_at_once(box, store, sessions, folder.name, own_env) if sessions else []
    failed = [p.wait() for p in procs]
    adds_done = time.perf_counter() - start
    outs = [p.communicate()[1] for p in procs]
    session_outs = [p.communicate()[0].decode("utf-8", "replace") for p in ran]
    failed += [p.returncode for p in ran]
    wall = time.perf_counter() - start
    stop.touch()
    answers = ast.literal_eval(reader.communicate()[0])
    bad = [o for o in outs if o.strip()] + [o[-600:] for o, p in zip(session_outs, ran) if p.returncode != 0]
    return {
        "wall": wall,
        "adds_wall": adds_done,
        "adds": adders * 12 + sessions,
        "expected": adders * 4 + 4 + sessions,
        "failed": sum(rc != 0 for rc in failed),
        "answers": answers,
        "said": bad[:1],
    }


def alone(store: str, folder: Path, writers: int, env: dict) -> float:
    paths = [str(folder / f"A{n}") for n in range(writers * 4)] + [str(folder / f"A{10_000 + k}") for k in range(4)]
    go = folder / "go-alone"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(go), "history", "add", *paths, "--store", store],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    go.touch()
    assert proc.wait() == 0
    return time.perf_counter() - start


def served(stack: ExitStack, store: str, base: Path, env: dict) -> str:
    """``gpuverify history serve`` on ``store`` (unsigned runs allowed: the artifacts here are not signed)."""
    import urllib.request

    from ports import free_port

    tokens, allowed = base / "tokens", base / "allowed_signers"
    tokens.write_text(f"bench {TOKEN}\n")
    allowed.write_text("")
    port = free_port()
    cmd = [*CLI, "history", "serve", "--store", store, "--allowed-signers", str(allowed), "--tokens", str(tokens)]
    proc = subprocess.Popen([*cmd, "--port", str(port), "--allow-unsigned"], env=env, stderr=subprocess.DEVNULL)
    stack.callback(proc.wait, 30)
    stack.callback(proc.terminate)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=2):
                return url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the service did not start on {store}") from None
            time.sleep(0.1)
    raise SystemExit("the service did not answer /v1/health in 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=4, help="how many writers are sessions on the simulated host")
    parser.add_argument("--url", help="a PostgreSQL server's URL (its database 'postgres'); default: start one here")
    parser.add_argument("--save", help="write the lines here too")
    args = parser.parse_args()
    lines = []
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "GPUVERIFY_HISTORY_TOKEN": TOKEN}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
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
        box = None
        if args.sessions:
            import docker
            from sandboxes import make_sandbox

            from pytest_gpuverify.cli import demo

            client = docker.from_env(timeout=120)
            demo.ensure_rootfs_image(client)
            box = stack.enter_context(make_sandbox(base / "host", client))
        service_db = new_database(f"s_{uuid.uuid4().hex[:8]}")
        ways = {  # name: (where the writers write, the database counted, a store for one writer alone)
            "service (postgresql)": (served(stack, service_db, base, env), service_db, None),
            "sqlite": (str(base / "h.db"), str(base / "h.db"), str(base / "alone.db")),
            "postgresql": (
                new_database(f"h_{uuid.uuid4().hex[:8]}"),
                None,
                new_database(f"a_{uuid.uuid4().hex[:8]}"),
            ),
        }
        rates = {}
        for name, (store, counted, single) in ways.items():
            counted = counted or store
            with closing(connect(locate(counted))):
                pass  # made before the reader starts
            folder = base / name.split()[0]
            got = at_once(store, folder, args.writers, args.sessions, box, env)
            with closing(connect(locate(counted))) as conn:
                stored, distinct = count(conn), len({r.artifact_sha256 for r in runs(conn, watch=False)})
            wall, expected, answers = got["wall"], got["expected"], got["answers"]
            rates[name] = stored / wall
            times = sorted(s for _, _, s in answers)
            seen = [n for ok, n, _ in answers if ok == 0]
            line = (
                f"{name}: {args.writers} writers at once ({args.sessions} sessions on the simulated host, "
                f"{args.writers - args.sessions} history add), {got['adds']} adds of {expected} runs in {wall:.2f} s: "
                f"{stored / wall:.1f} runs/s (the history add writers' {expected - args.sessions} runs in "
                f"{got['adds_wall']:.2f} s: {(expected - args.sessions) / got['adds_wall']:.1f} runs/s); "
                f"stored {stored} of {expected} ({max(expected - distinct, 0)} lost, "
                f"{stored - distinct} doubled), {got['failed']} writer(s) failed; reader: {len(answers)} answers, "
                f"{sum(ok != 0 for ok, _, _ in answers)} failed, counts never went back: {seen == sorted(seen)}, "
                f"median {times[len(times) // 2] if times else 0:.2f} s, slowest {times[-1] if times else 0:.2f} s"
            )
            if single:
                one = alone(single, folder, args.writers - args.sessions, env)
                line += f"; one writer alone: {(expected - args.sessions) / one:.1f} runs/s"
            lines.append(line + (f"; first failure: {got['said'][0].strip()[-300:]}" if got["said"] else ""))
        lines.append(
            "runs/s, service (postgresql) / sqlite: "
            f"{rates['service (postgresql)'] / rates['sqlite']:.2f}; service / postgresql straight: "
            f"{rates['service (postgresql)'] / rates['postgresql']:.2f}"
        )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.append(f"machine: {os.cpu_count()} CPU(s), load average {load} at the end (each writer is a Python process)")
    text = "\n".join(lines)
    print(text)
    if args.save:
        Path(args.save).write_text(text + "\n")


if __name__ == "__main__":
    main()
