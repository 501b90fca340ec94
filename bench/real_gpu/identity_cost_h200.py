"""What reading the machine's identity (place/machine.py) costs on a real NVIDIA machine, through NVML:
fresh interpreters, as sessions are; the first read cold (the facts cache empty), the rest warm (the
fixed facts from the cache, the changing ones read afresh). Prints each read's wall and CPU ms, the warm
medians and the goal (< 20 ms warm).

    python3 bench/real_gpu/identity_cost_h200.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

READ = """
import json, os, sys, time
from pathlib import Path
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu.nvidia import NvidiaBackend
from pytest_gpuverify.place.facts_cache import FactsCache
from pytest_gpuverify.records.artifact import Artifact
t0 = time.perf_counter()
from pytest_gpuverify.place.machine import read_machine
t1 = time.perf_counter()
backend = NvidiaBackend(LocalHost(dict(os.environ)))
backend.read()
inventory = backend.inventory()
w, c = time.perf_counter(), time.process_time()
record = read_machine(backend, inventory, FactsCache(Path(sys.argv[1])))
print(json.dumps({"import_ms": (t1 - t0) * 1000, "read_ms": (time.perf_counter() - w) * 1000,
                  "cpu_ms": (time.process_time() - c) * 1000, "kept": record.kept_from is not None,
                  "driver": record.driver, "unknowns": len(record.unknowns)}))
"""

GOAL_MS = 20.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    rounds = ap.parse_args().rounds
    with tempfile.TemporaryDirectory() as cache:
        found = []
        for i in range(rounds):
            proc = subprocess.run([sys.executable, "-c", READ, cache], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"round {i}: exit {proc.returncode}: {proc.stderr.strip()[-800:]}")
                return 1
            one = json.loads(proc.stdout.strip().splitlines()[-1])
            found.append(one)
            print(
                f"round {i} ({'warm' if one['kept'] else 'cold'}): import {one['import_ms']:.1f} ms, read "
                f"{one['read_ms']:.1f} ms wall, {one['cpu_ms']:.1f} ms CPU; driver {one['driver']}, "
                f"{one['unknowns']} unknown"
            )
    warm = [f for f in found if f["kept"]]
    if not warm:
        print("no warm read: the facts cache was not used")
        return 1
    wall = statistics.median(f["read_ms"] + f["import_ms"] for f in warm)
    cpu = statistics.median(f["cpu_ms"] for f in warm)
    print(
        f"warm (import + read): median {wall:.1f} ms wall, read CPU {cpu:.1f} ms; cold read {found[0]['read_ms']:.1f} ms"
    )
    print(f"goal: < {GOAL_MS:g} ms per session warm: {'met' if wall < GOAL_MS else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
