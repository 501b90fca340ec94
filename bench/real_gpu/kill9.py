"""kill -9 of pytest while its command runs on the real GPU: the run's guard must stop the command
before the GPU lock goes. Prints the timeline and whether the GPU was ever free while the command
still ran (it must not be).

    python3 kill9.py LOCK_FILE TICKET_DIR -- <pytest command that runs the gpu-load target>
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def runs() -> bool:
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"op_tests/gpu_load.py" in (proc / "cmdline").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def free(lock: str) -> bool:
    return subprocess.run(["flock", "-n", lock, "true"]).returncode == 0


def main() -> int:
    lock, tickets, cmd = sys.argv[1], Path(sys.argv[2]), sys.argv[sys.argv.index("--") + 1 :]
    pytest = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline and not any(b"load start" in p.read_bytes() for p in tickets.glob("*.log")):
        time.sleep(0.1)
    print(f"command running: {runs()}, lock held: {not free(lock)}")
    os.kill(pytest.pid, signal.SIGKILL)
    t0 = time.monotonic()
    pytest.wait()
    gone_at = free_at = None
    violations = 0
    while time.monotonic() - t0 < 60:
        is_free = free(lock)
        still = runs()  # read after the lock: a command seen now also ran then
        now = (time.monotonic() - t0) * 1000
        violations += is_free and still
        if not still and gone_at is None:
            gone_at = now
        if is_free and free_at is None:
            free_at = now
        if is_free and not still:
            break
        time.sleep(0.02)
    print(
        f"pytest killed (-9); command gone after {gone_at:.0f} ms, lock free after {free_at:.0f} ms; "
        f"checks with the GPU free while the command ran: {violations} (must be 0)"
    )
    return 0 if violations == 0 and gone_at is not None and free_at is not None else 1


if __name__ == "__main__":
    sys.exit(main())
