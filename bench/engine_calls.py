"""Docker Engine calls per target command in a container, and the time of one command through
`ContainerExecutor.stream_to_file` (the path every target takes), against a bare `docker exec`.
With ``--other PATH`` (another checkout, e.g. an older commit's ``git archive``) the same for it,
interleaved round by round. Each call to the engine is counted by name; a `true` command makes the
command itself nothing, so what is left is the plugin's exec path.

    python bench/engine_calls.py [--rounds 3] [--execs 20] [--other PATH] [--name gv-bench-calls]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = str(Path(__file__).resolve().parents[1])


def measure(name: str, execs: int) -> dict:
    """In this process (the checkout on PYTHONPATH): engine calls per command and the walls."""
    from pytest_gpuverify.execute.container import ContainerExecutor, docker_client

    client = docker_client()
    api, calls, running = client.api, {}, []

    def counted(call: str):
        real = getattr(api, call)

        def wrapper(*a, **k):
            out = real(*a, **k)
            calls[call] = calls.get(call, 0) + 1
            if call == "exec_inspect":
                running.append(bool(out.get("Running")))
            return out

        return wrapper

    for call in ("exec_create", "exec_start", "exec_inspect", "inspect_container"):
        setattr(api, call, counted(call))
    handle = ContainerExecutor(client, name)
    out = Path(tempfile.mkdtemp(prefix="gv-calls-")) / "out.log"
    walls = []
    for _ in range(execs):
        t0 = time.perf_counter()
        handle.stream_to_file(["true"], out)
        walls.append(time.perf_counter() - t0)
    return {"walls": walls, "calls": {k: v / execs for k, v in calls.items()}, "running": sum(running)}


def bare(name: str, execs: int) -> list[float]:
    walls = []
    for _ in range(execs):
        t0 = time.perf_counter()
        subprocess.run(["docker", "exec", name, "true"], check=True)
        walls.append(time.perf_counter() - t0)
    return walls


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--execs", type=int, default=20)
    ap.add_argument("--other", help="another checkout's folder holding pytest_gpuverify/")
    ap.add_argument("--name", default="gv-bench-calls", help="the container made (and removed) for the run")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(measure(args.name, args.execs)))
        return 0
    sys.path.insert(0, HERE)
    from pytest_gpuverify.cli import demo
    from pytest_gpuverify.execute.container import docker_client

    client = docker_client()
    demo.start_container(client, args.name, None, {})
    trees = {"this tree": HERE, **({"other": args.other} if args.other else {})}
    got = {k: {"walls": [], "calls": {}, "running": 0} for k in trees}
    bare_walls: list[float] = []
    try:
        for round_ in range(args.rounds):
            bare_walls += bare(args.name, args.execs)
            order = list(trees.items())
            for label, code in order[::-1] if round_ % 2 else order:  # neither checkout always goes first
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")])))
                res = json.loads(
                    subprocess.run(
                        [sys.executable, "-P", __file__, "--inner", "--name", args.name, "--execs", str(args.execs)],
                        env=env,
                        capture_output=True,
                        check=True,
                        text=True,
                    ).stdout
                )
                got[label]["walls"] += res["walls"]
                got[label]["calls"] = res["calls"]
                got[label]["running"] += res["running"]
    finally:
        demo.remove_sandbox_containers(client, [args.name])
    b = statistics.median(bare_walls)
    print(f"bare `docker exec NAME true`: median {b * 1000:.1f} ms ({len(bare_walls)} execs)")
    for label, res in got.items():
        m = statistics.median(res["walls"])
        calls = ", ".join(f"{k} {v:.2f}" for k, v in sorted(res["calls"].items()))
        print(
            f"{label:<10}: one command through stream_to_file: median {m * 1000:.1f} ms = {m / b:.2f} bare execs; "
            f"engine calls per command: {sum(res['calls'].values()):.2f} ({calls}); "
            f"exec_inspect still running after the stream: {res['running']} times"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
