"""Where a session's first window comes from: the driver's history (NVML), the background sampler's
history (ROCm: :mod:`.readings_daemon`), or, when neither serves, readings over the window itself.

Every source gives readings judged by the same idle rules (:mod:`.sampler`); only the wait differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from pytest_gpuverify.common.threads import environ_copy
from pytest_gpuverify.gpu.base import GpuReading
from pytest_gpuverify.lease.readings_daemon import (
    ENV_IDLE_EXIT,
    ENV_OFF,
    IDLE_EXIT_S,
    history_path,
    seen_path,
    take_daemon_lock,
)
from pytest_gpuverify.lease.sampler import HistorySource, PastSample

DRIVER, DAEMON, WINDOW = "driver history", "background sampler", "window"


def daemon_history(
    shared_path: Path, window_s: float, interval_s: float, now: float | None = None
) -> tuple[list[PastSample] | None, str]:
    """The background sampler's readings over the last ``window_s``, or None and why not."""
    now = time.time() if now is None else now
    try:
        data = json.loads(history_path(shared_path).read_bytes())
        raw = data["samples"]
        every = float(data.get("interval") or interval_s)
        samples = [
            PastSample(
                float(s["t"]),
                [GpuReading.model_validate(r) for r in s.get("readings", [])],
                frozenset(s.get("locked", [])),
                s.get("error"),
            )
            for s in raw
        ]
    except FileNotFoundError:
        return None, "no background sampler ran"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"the background sampler's history is unreadable ({type(exc).__name__})"
    slack = max(every, interval_s)
    samples = [s for s in samples if s.t >= now - window_s - slack]
    if not samples or now - samples[-1].t > 2.5 * slack:
        return None, "the background sampler's history is stale"
    if samples[0].t > now - window_s + slack:
        return None, f"the background sampler's history spans {now - samples[0].t:.1f} s, less than the window"
    times = [s.t for s in samples] + [now]
    if max(b - a for a, b in zip(times, times[1:])) > 2.5 * slack:
        return None, "the background sampler's history has a gap"
    return samples, ""


def daemon_running(shared_path: Path, interval_s: float) -> bool:
    """A background sampler wrote its history within the last few intervals."""
    try:
        age = time.time() - history_path(shared_path).stat().st_mtime
    except OSError:
        return False
    return age < max(3 * interval_s, 2.0)


STARTED, RUNNING, OFF = "started", "running", "off"


def start_background_sampler(
    shared_path: Path, arch: str | None, lock_template: str, interval_s: float, window_s: float
) -> str:
    """Start the daemon: STARTED, RUNNING (one holds the key's lock), or OFF (turned off, or it cannot
    start). The lock is taken here and handed to the daemon, so sessions starting at once start one."""
    if os.environ.get(ENV_OFF, "1") == "0":
        return OFF
    try:
        fd = take_daemon_lock(shared_path)
    except OSError:
        return OFF  # the folder is not ours to write
    if fd is None:
        return RUNNING
    idle = os.environ.get(ENV_IDLE_EXIT) or str(IDLE_EXIT_S)
    root = str(Path(__file__).resolve().parents[2])  # the folder above the package
    env = dict(environ_copy(), PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest_gpuverify.lease.readings_daemon",
                str(shared_path),
                arch or "",
                lock_template,
                f"{interval_s:g}",
                f"{max(2 * window_s, 10.0):g}",
                idle,
                str(fd),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd="/",
            env=env,
            pass_fds=(fd,),
        )
    except OSError:
        return OFF
    finally:
        os.close(fd)  # the daemon's copy holds the lock now (or, if it did not start, nobody)
    threading.Thread(target=proc.wait, name="gpuverify-daemon-reaper", daemon=True).start()  # it forks and exits
    return STARTED


def history_source(
    backend, shared_path: Path | None, arch: str | None, lock_template: str, interval_s: float
) -> HistorySource:
    """The session's :class:`.sampler.HistorySource`: the driver's history where the backend keeps
    one, else the background sampler's (started for the next session when it is not there)."""

    def source(window_s: float):
        reasons = []
        history = getattr(backend, "history", None)
        if history is not None:
            got, why = history(window_s)
            if got is not None:
                return [PastSample(end, readings) for end, readings in got.steps], DRIVER, ""
            reasons.append(why)
        if shared_path is None:
            return None, WINDOW, "; ".join(reasons)
        try:
            seen_path(shared_path).touch()  # a reader: the daemon stays
        except OSError:
            pass
        past, why = daemon_history(shared_path, window_s, interval_s)
        if past is not None:
            return past, DAEMON, ""
        reasons.append(why)
        started = (
            RUNNING
            if daemon_running(shared_path, interval_s)
            else start_background_sampler(shared_path, arch, lock_template, interval_s, window_s)
        )
        if started == RUNNING:
            reasons.append("the background sampler started a moment ago")
        elif started == STARTED:
            reasons.append("a background sampler starts for the next session")
        return None, WINDOW, "; ".join(reasons)

    return source


def describe_window(backend, shared_path: Path | None, window_s: float, interval_s: float) -> str:
    """Which applies to a session's first pick now, for ``gpuverify doctor``. Read-only: it starts
    no background sampler and counts as no reader."""
    history = getattr(backend, "history", None)
    why = []
    if history is not None:
        got, note = history(window_s)
        if got is not None:
            return f"{DRIVER}: the first pick reads the last {window_s:g} s from the driver at once"
        why.append(note)
    if shared_path is not None:
        past, note = daemon_history(shared_path, window_s, interval_s)
        if past is not None:
            try:
                pid = json.loads(history_path(shared_path).read_bytes()).get("pid")
            except (OSError, ValueError):
                pid = None
            return f"{DAEMON} (pid {pid}): the first pick reads its last {window_s:g} s at once"
        why.append(note)
    return (
        f"{WINDOW}: the first pick of a session waits {window_s:g} s ({'; '.join(w for w in why if w)}); "
        "the first session starts a background sampler for the next ones"
    )
