"""What the import probe costs a command's Python process: a bare ``python3 -c`` start with the probe on
its ``PYTHONPATH`` against one without, interleaved, in one run (place/import_probe.py).

    python3 bench/import_probe_cost.py [--starts 200] [--imports json]

Prints the median start-to-exit time of each and their ratio and difference; the probe's share is its
file read at start and, where the process imported a package under test, one small write at exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.place.import_probe import install_command, probe_env, read_back_command  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=200)
    ap.add_argument("--imports", default="json", help="the package under test the command imports")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        probe, records = f"{tmp}/import-probe-bench", f"{tmp}/records"
        subprocess.run(install_command(probe), check=True)
        code = f"import {args.imports}"
        plain = {**os.environ, "PYTHONPATH": tmp}
        probed = {**os.environ, **probe_env(probe, records, [args.imports], tmp)}
        subprocess.run(
            [sys.executable, "-c", code], env=probed, check=True
        )  # its bytecode cached, as after a first run
        bare, with_probe = [], []
        for _ in range(args.starts):
            for env, out in ((plain, bare), (probed, with_probe)):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], env=env, check=True)
                out.append(time.perf_counter() - t0)
        recorded = subprocess.run(read_back_command(records), capture_output=True, text=True).stdout.count("\n")
    b, p = statistics.median(bare), statistics.median(with_probe)
    print(f"python3 -c 'import {args.imports}', {args.starts} starts each, interleaved; {recorded} records written")
    print(f"  bare:       {b * 1e3:7.2f} ms median")
    print(f"  with probe: {p * 1e3:7.2f} ms median")
    print(f"  ratio {p / b:.3f}, probe {1e3 * (p - b):+.2f} ms per Python process")


if __name__ == "__main__":
    main()
