"""How long a command that ignores SIGTERM outlives its --gpu-timeout, in the container and on the host.

A real Docker container on the simulated ROCm host (the tests' sandbox) runs an op_test that
ignores SIGTERM and prints its start time; the figure is the run's end (the artifact's
``finished_ts``, stamped after the command was gone) minus that start. Target: at most the limit
+ 5 s (execute/bounds.py: SIGKILL 3 s after SIGTERM).

    python bench/kill_grace.py [--timeout 5]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "tests" / "support")]

IGNORES_TERM = """import signal, time
import aiter
signal.signal(signal.SIGTERM, lambda *a: print("got SIGTERM, going on", flush=True))
aiter.report_environment()
print(f"started {time.time()}", flush=True)
while True:
    time.sleep(0.1)
"""


def main() -> None:
    import docker
    from conftest import make_sandbox  # the tests' sandbox: simulated host, real container

    from pytest_gpuverify.cli import demo

    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=5)
    limit = parser.parse_args().timeout
    client = docker.from_env(timeout=120)
    demo.ensure_rootfs_image(client)
    with tempfile.TemporaryDirectory() as tmp, make_sandbox(Path(tmp) / "host", client) as box:
        (box.repo / "op_tests" / "test_stubborn.py").write_text(IGNORES_TERM)
        subprocess.run(["git", "-C", str(box.repo), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(box.repo), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "b"], check=True
        )
        for where, extra in (("container", []), ("host", ["--gpu-container", "none"])):
            box.pytest("op_tests/test_stubborn.py", "--gpu-timeout", f"{limit:g}", *extra, ticket=f"G-{where}")
            art = box.artifact("stubborn", ticket=f"G-{where}")
            raw = (box.tickets / f"G-{where}" / art.raw_output).read_text()
            started = float(re.search(r"^started ([\d.]+)$", raw, re.M).group(1))
            gone = datetime.fromisoformat(art.finished_ts).timestamp() - started
            print(
                f"{where:9} --gpu-timeout {limit:g}: command start to run end {gone:.1f} s "
                f"= limit + {gone - limit:.1f} s (target <= limit + 5 s), timed_out={art.timed_out}"
            )


if __name__ == "__main__":
    main()
