"""The background sampler: one per host and user (and lock convention), outliving the sessions.

ROCm keeps no history of GPU use, so a session's first pick would wait a whole window. The first
session starts this small daemon (double fork, ``setsid``: no session waits for it or owns it); it
reads the GPUs every interval, as a session's own sampler does, with the lock states of each
moment from ``/proc/locks``, and keeps the last readings in ``<shared readings>.history.json``. A
later session that finds the history fresh and long enough starts with its window full
(:func:`.window_history.daemon_history`). The daemon exits when nobody has read it for
``idle_exit_s`` (sessions touch ``<shared readings>.seen``), when the lock folder is gone, or when
another daemon of the same key runs (one ``flock`` on ``<shared readings>.daemon``).

    python -m pytest_gpuverify.lease.readings_daemon SHARED_PATH ARCH LOCK_TEMPLATE INTERVAL HISTORY IDLE_EXIT [LOCK_FD]
    (LOCK_FD: the lock's descriptor, inherited and already held)
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from pathlib import Path

from pytest_gpuverify.common.locks import try_lock_file

IDLE_EXIT_S = 300.0  # five minutes without a reader
ENV_IDLE_EXIT = "GPUVERIFY_SAMPLER_IDLE_S"  # another idle time (the tests' short-lived hosts)
ENV_OFF = "GPUVERIFY_BACKGROUND_SAMPLER"  # "0": never start one


def history_path(shared: Path) -> Path:
    return shared.with_name(shared.name + ".history.json")


def seen_path(shared: Path) -> Path:
    return shared.with_name(shared.name + ".seen")


def daemon_lock_path(shared: Path) -> Path:
    return shared.with_name(shared.name + ".daemon")


def _write(path: Path, payload: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(payload)
    os.replace(tmp, path)


def take_daemon_lock(shared: Path) -> int | None:
    """The key's one daemon lock (an fd holding it), or None when a daemon holds it already."""
    return try_lock_file(daemon_lock_path(shared))


def run(
    shared: Path,
    arch: str,
    lock_template: str,
    interval_s: float,
    history_s: float,
    idle_exit_s: float,
    lock_held: bool = False,
) -> int:
    """``lock_held``: the session that started this daemon took the lock and handed it over (an
    inherited fd: so sessions starting at once start one daemon, not one each that all but one end
    after their imports)."""
    if not lock_held and take_daemon_lock(shared) is None:
        return 0  # another daemon of this key runs: checked before the imports below, which cost a start
    from pytest_gpuverify.execute.host_commands import LocalHost
    from pytest_gpuverify.gpu import select_backend
    from pytest_gpuverify.gpu.base import GpuToolError
    from pytest_gpuverify.lease.lock import held_lock_ids, is_held
    from pytest_gpuverify.lease.sampler import reading_interval

    backend = select_backend(arch or None, LocalHost())
    interval_s = reading_interval(backend, interval_s)  # written into the history: its readers take it
    lock_dir = Path(lock_template).parent
    samples: deque = deque()
    seen = seen_path(shared)
    started = time.time()
    next_at = time.monotonic()
    while True:
        t = time.time()
        entry: dict = {"t": t}
        try:
            readings = backend.read()
            held = held_lock_ids() or set()
            entry["readings"] = [r.model_dump() for r in readings]
            entry["locked"] = [
                r.index for r in readings if is_held(Path(lock_template.replace("<id>", str(r.index))), held)
            ]
        except GpuToolError as exc:
            entry["error"] = str(exc)
        except Exception as exc:  # a backend bug is a hole in the history, never a dead daemon
            entry["error"] = f"{type(exc).__name__}: {exc}"
        samples.append(entry)
        while samples and samples[0]["t"] < t - history_s:
            samples.popleft()
        payload = {"t": t, "pid": os.getpid(), "interval": interval_s, "since": started, "samples": list(samples)}
        try:
            if "readings" in entry:  # the sessions' own samplers take it instead of reading (shared_readings.py)
                _write(shared, json.dumps({"t": t, "readings": entry["readings"]}).encode())
            _write(history_path(shared), json.dumps(payload).encode())
        except OSError:
            return 1  # the folder went away or is not ours to write
        try:
            last_read = os.stat(seen).st_mtime
        except OSError:
            last_read = started
        if time.time() - max(last_read, started) > idle_exit_s or not lock_dir.is_dir():
            for leftover in (history_path(shared), seen):  # a stale history must not outlive its daemon
                try:
                    leftover.unlink()
                except OSError:
                    pass
            return 0
        next_at = max(next_at + interval_s, time.monotonic())
        time.sleep(max(0.0, next_at - time.monotonic()))


def main(argv: list[str]) -> int:
    shared, arch, template, interval, history, idle, *held = argv
    # The second fork: the process the session started exits at once (the session reaps it), this
    # one is nobody's child and in no one's session or terminal.
    if os.fork() > 0:
        return 0
    os.chdir("/")
    return run(Path(shared), arch, template, float(interval), float(history), float(idle), lock_held=bool(held))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
