"""What looking for a run's leftover processes costs on the handoff path.

The container's exec wrapper looks for processes the run left behind after the command ends and
before the exec (and so the GPU's lock) ends (pytest_gpuverify/leftovers.py). This times execs of
`true` through the plugin's wrapper, alternately with the run's marker (the look-up runs) and
without it (it does not), in one container, and prints both medians and their difference; then the
same for a command that leaves one detached child (its SIGTERM and the report included). On the
host the look-up reads only processes new since the command started: timed in-process.

    python bench/leftovers.py [--reps 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.execute.container import ContainerExecutor, docker_client  # noqa: E402
from pytest_gpuverify.execute.leftovers import MARKER, proc_pids, stop_marked  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    reps = parser.parse_args().reps
    client = docker_client()
    demo.ensure_rootfs_image(client)
    name = f"gv-bench-{uuid.uuid4().hex[:8]}"
    demo.start_container(client, name, None, {})
    try:
        handle = ContainerExecutor(client, name)

        def timed(argv, env) -> float:
            t = time.perf_counter()
            handle.capture(argv, env=env, timeout_s=60)
            return time.perf_counter() - t

        for _ in range(3):
            timed(["true"], {}), timed(["true"], {MARKER: "warm"})
        bare, swept = [], []
        for i in range(reps):
            bare.append(timed(["true"], {}))
            swept.append(timed(["true"], {MARKER: f"r{i}"}))
        b, s = statistics.median(bare), statistics.median(swept)
        print(
            f"container, nothing left: exec median {b * 1e3:.1f} ms without the look-up, {s * 1e3:.1f} ms with it "
            f"(+{(s - b) * 1e3:.1f} ms, ratio {s / b:.3f}); {reps} each, alternating"
        )
        child = ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 < /dev/null &"]
        left = [timed(child, {MARKER: f"c{i}"}) for i in range(max(3, reps // 5))]
        print(
            f"container, one detached child left: exec median {statistics.median(left) * 1e3:.1f} ms "
            "(found, SIGTERM, gone, reported)"
        )
    finally:
        demo.remove_sandbox_containers(client, [name])
    before = proc_pids()
    t = time.perf_counter()
    for i in range(reps):
        stop_marked(f"none-{i}", before)
    print(
        f"host, nothing left: {(time.perf_counter() - t) / reps * 1e3:.2f} ms per look-up "
        f"({len(before)} processes on the host, only new ones read)"
    )
    run_id = uuid.uuid4().hex
    subprocess.Popen(["sleep", "300"], env=dict(os.environ, **{MARKER: run_id}), start_new_session=True)
    t = time.perf_counter()
    found = stop_marked(run_id, before)
    print(f"host, one detached child left: {(time.perf_counter() - t) * 1e3:.1f} ms to find and stop {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
