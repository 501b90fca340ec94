"""What reading the machine's identity (place/machine.py) costs a session: the `machine identity` phase of
each session's `--gpu-profile`, as a ratio to that session's wall time, and in ms. Sessions of one
target on the simulated ROCm host (--gpu-container none), in interleaved rounds: a session with the
GPUs read through the amdsmi library in-process (as on a ROCm install) and one with the tools only.
The first round is cold (the fixed facts are read and kept); the rounds after it are warm (the fixed
facts come from the facts cache, the changing ones are read afresh). Also: the same read in-process,
warm, repeated (no session around it).

    python bench/identity_cost.py [--rounds 8] [--gpus 8] [--out bench/results/identity_cost.txt]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostbench import make_host, plugin_flag  # noqa: E402

PHASE = re.compile(r"^\s*machine identity\s+([\d.]+) ms", re.M)
GOAL_MS = 20.0


def session(env_file: Path, repo: Path, env: dict, ticket: str) -> tuple[float, float]:
    """(the session's wall s, its `machine identity` ms) of one plugin session with --gpu-profile."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *plugin_flag(),
        "--gpu-verify",
        "--gpu-container",
        "none",
        "--gpu-env",
        str(env_file),
        "--gpu-window",
        "0.3",
        "--gpu-profile",
        "--ticket",
        ticket,
        "gpuverify.toml",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    found = PHASE.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        raise SystemExit(
            f"session {ticket} (exit {proc.returncode}) printed no machine identity phase:\n{proc.stdout[-3000:]}"
        )
    return wall, float(found.group(1))


# One fresh interpreter, as a session's: what a session imports anyway, then the identity's own modules
# (timed), the GPUs read once (the library started, as the session's first reading starts it), then the
# identity read with the facts cache given (timed: wall, and the process's CPU time, all its threads:
# the library's calls run in a thread of their own; a machine shared with other work does not inflate it).
READ = """
import json, os, sys, time
from pathlib import Path
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.rocm import RocmBackend
from pytest_gpuverify.place.facts_cache import FactsCache  # a session imports these whatever it records
from pytest_gpuverify.records.artifact import Artifact
t0 = time.perf_counter()
from pytest_gpuverify.place.machine import read_machine  # the identity's own modules
t1 = time.perf_counter()
backend = RocmBackend(LocalHost(dict(os.environ)))
backend.read()
inventory = backend.inventory()
w, c = time.perf_counter(), time.process_time()
record = read_machine(backend, inventory, FactsCache(Path(sys.argv[1])))
print(json.dumps({"import_ms": (t1 - t0) * 1000, "read_ms": (time.perf_counter() - w) * 1000,
                  "cpu_ms": (time.process_time() - c) * 1000, "kept": record.kept_from is not None}))
"""


def isolated(env: dict, cache: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", READ, str(cache)], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "pytest_gpuverify"), quiet=1)  # as pip installs it
    root = Path(tempfile.mkdtemp(prefix="gv-identity-"))
    env_file, repo, sim = make_host(root, args.gpus, 1, 0.05)
    assert sim is not None
    base = dict(
        os.environ,
        PATH=f"{sim}:{os.environ['PATH']}",
        GV_LEDGER=str(root / "ledger"),
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
        ),
    )
    base.pop("ROCM_PATH", None)
    kinds = {"library": dict(base, ROCM_PATH=str(sim)), "tools": base}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    alone: dict[str, list[dict]] = {k: [] for k in kinds}
    cold: dict[str, tuple[float, float]] = {}
    cache = root / "identity-cache"
    cache.mkdir()
    for i in range(args.rounds + 1):  # round 0 is cold: it reads the fixed facts and keeps them
        for kind, env in kinds.items():
            result = session(env_file, repo, env, f"{kind[0].upper()}-{i}")
            read = isolated(env, cache)
            if i == 0:
                cold[kind] = result
            else:
                got[kind].append(result)
                assert read["kept"], read  # warm: the fixed facts came from the cache
                alone[kind].append(read)
    lines = [
        f"# python bench/identity_cost.py --rounds {args.rounds} --gpus {args.gpus}  "
        f"({time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {os.cpu_count()} cores, simulated ROCm host, "
        f"{args.gpus} GPUs, one target a session, --gpu-container none, rounds interleaved)"
    ]
    costs = {}
    for kind in kinds:
        walls, ms = [w for w, _ in got[kind]], [m for _, m in got[kind]]
        session_ms = statistics.median(walls) * 1000
        cost = [r["import_ms"] + r["read_ms"] for r in alone[kind]]
        costs[kind] = statistics.median(cost)
        lines.append(f"{kind}: bare session (one target) median {session_ms:.0f} ms")
        lines.append(
            f"  warm cost, own interpreter (import + read): median {costs[kind]:.1f} ms (import "
            f"{statistics.median(r['import_ms'] for r in alone[kind]):.1f}, read "
            f"{statistics.median(r['read_ms'] for r in alone[kind]):.1f}, read CPU "
            f"{statistics.median(r['cpu_ms'] for r in alone[kind]):.1f}); ratio to the session "
            f"{costs[kind] / session_ms:.4f}"
        )
        lines.append(
            f"  in the session, its start thread (wall, beside collection and the sampler: waits on the GIL "
            f"and the library's lock included): median {statistics.median(ms):.1f} ms (all: "
            f"{', '.join(f'{m:.1f}' for m in ms)}); cold {cold[kind][1]:.1f} ms"
        )
    cpu = statistics.median(r["import_ms"] + r["cpu_ms"] for r in alone["library"])
    lines.append(
        f"goal: < {GOAL_MS:g} ms per session warm (the library path): wall {costs['library']:.1f} ms "
        f"({'met' if costs['library'] < GOAL_MS else 'NOT met'}), CPU {cpu:.1f} ms "
        f"({'met' if cpu < GOAL_MS else 'NOT met'})"
    )
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
