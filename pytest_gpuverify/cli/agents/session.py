"""``verify``: the targets run as one ``pytest --gpu-verify --ticket KEY`` session, started as a process
the way ``gpuverify bisect`` starts its A/B session (cli/ab_runner.py), so every rule of a run holds (the
lock, the import check, the verdict). While it runs, the ticket folder and the GPU locks are read for
progress; a cancel sends the session SIGINT, whose own interrupt path stops the command, frees the lock
and writes an INCONCLUSIVE artifact saying it was interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from pytest_gpuverify.cli.ab_runner import artifacts_in_report
from pytest_gpuverify.cli.agents.models import TargetResult, VerifyResult
from pytest_gpuverify.cli.agents.places import Places, split_targets
from pytest_gpuverify.cli.agents.verbs import summary
from pytest_gpuverify.records.artifact import read_artifact

POLL_S = 0.25
STOP_GRACE_S = 60.0  # the session's own interrupt path: stop the command, write the artifact, free the lock


@dataclass
class VerifyRequest:
    ticket: str
    targets: list[str]
    repo: str | None = None
    repeats: int | None = None
    ab_base: str | None = None
    history_store: str | None = None  # add each artifact to this history store
    wait_s: float | None = None
    window_s: float | None = None
    timeout_s: float | None = None


@dataclass
class Running:
    """What the session shows while it runs: artifacts written, the log of the target running."""

    folder: Path
    started: float
    before: dict[str, int] = field(default_factory=dict)

    def done(self) -> list[Path]:
        return [
            p for p, m in _mtimes(self.folder, "bench_*.json") if m >= self.started_ns and self.before.get(p.name) != m
        ]

    def logs(self) -> list[Path]:
        return [p for p, m in _mtimes(self.folder, "bench_*.log") if m >= self.started_ns]

    @property
    def started_ns(self) -> int:
        return int(self.started * 1e9)


def _mtimes(folder: Path, pattern: str) -> list[tuple[Path, int]]:
    """The files' modification times; one moved aside or removed meanwhile is left out."""
    found = []
    for path in sorted(folder.glob(pattern)) if folder.is_dir() else []:
        try:
            found.append((path, path.stat().st_mtime_ns))
        except OSError:
            continue
    return found


def session_command(places: Places, req: VerifyRequest, checkout: Path, junit: Path) -> list[str]:
    names, paths = split_targets(checkout, req.targets)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gpu-verify", "--gpu-env", str(places.env.path)]
    cmd += ["--ticket", req.ticket, f"--junitxml={junit}"]
    for name in names:
        cmd += ["--gpu-target", name]
    for option, value in (
        ("--gpu-repeats", req.repeats),
        ("--gpu-ab", req.ab_base),
        ("--gpu-wait", req.wait_s),
        ("--gpu-window", req.window_s),
        ("--gpu-timeout", req.timeout_s),
    ):
        if value is not None:
            cmd += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    if req.history_store is not None:
        cmd.append(f"--gpu-history={req.history_store}")
    return cmd + paths


def waiting_for(places: Places) -> str:
    """Which GPU locks others hold now, from /proc/locks (doctor's reading)."""
    from pytest_gpuverify.config.hosts import lock_for, select_host
    from pytest_gpuverify.config.options import RunOptions
    from pytest_gpuverify.lease.lock import lock_holders, lock_id

    try:
        row = select_host(places.env, RunOptions(env_path=places.env.path))
        path_for = lock_for(places.env, row)[0].path_for
        held = lock_holders() or {}
        locks = [path_for(i) for i in range(row.gpus or 0)]
        busy = sum(1 for lock in locks if lock_id(lock) in held)
    except Exception:  # a reading for a progress line never stops the run
        return "waiting for an idle GPU"
    return f"waiting for an idle GPU ({busy} of {len(locks)} GPU locks held)"


async def run_verify(
    places: Places, req: VerifyRequest, progress: Callable[[float, float, str], Awaitable[None]]
) -> VerifyResult:
    row, checkout = places.repo(req.repo)
    folder = places.ticket(req.ticket, must_exist=False)
    total = float(len(req.targets))
    with tempfile.TemporaryDirectory(prefix="gpuverify-mcp-") as scratch:
        junit = Path(scratch) / "session.xml"
        cmd = session_command(places, req, checkout, junit)
        before = {p.name: p.stat().st_mtime_ns for p in folder.glob("bench_*.json")} if folder.is_dir() else {}
        running = Running(folder, time.time() - 1, before)  # mtimes have coarse clocks on some file systems
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        proc = subprocess.Popen(
            cmd, cwd=checkout, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        tail: deque[str] = deque(maxlen=20)
        reader = threading.Thread(target=_read_lines, args=(proc, tail), daemon=True)
        reader.start()
        cancelled = False
        try:
            last = ""
            while proc.poll() is None:
                done = running.done()
                logs = [p for p in running.logs() if not any(p.name.startswith(d.stem + ".") for d in done)]
                said = f"running {logs[-1].name}" if logs else waiting_for(places)
                message = f"{len(done)} of {int(total)} targets done; {said}"
                if message != last:
                    await progress(float(len(done)), total, message)
                    last = message
                await anyio.sleep(POLL_S)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_stop, proc)
            raise
        finally:
            if proc.poll() is None:  # the server itself is going: the session must not outlive it
                _stop(proc)
            reader.join(timeout=5)
            found = artifacts_in_report(junit)
    return _result(req, folder, proc.returncode, found, list(tail), cancelled)


def _read_lines(proc: subprocess.Popen, tail: deque[str]) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip()
        if line.strip():
            tail.append(line)


def _stop(proc: subprocess.Popen) -> None:
    """Ctrl-C's path of the session; SIGTERM (the same path) if it does not end, SIGKILL last."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    proc.wait()


def _result(req: VerifyRequest, folder: Path, code: int | None, found: list[Path], tail: list[str], cancelled: bool):
    targets = []
    problem = None
    for path in found:
        try:
            targets.append(TargetResult(artifact=summary(read_artifact(path), path)))
        except (OSError, ValueError) as exc:
            problem = f"{path}: not readable ({str(exc).splitlines()[0]})"
    if not found:
        problem = f"the session (pytest exit {code}) reported no artifact: {tail[-1] if tail else 'no output'}"
    return VerifyResult(
        ticket=req.ticket,
        folder=str(folder),
        pytest_exit=code,
        cancelled=cancelled,
        targets=targets,
        problem=problem,
        output_tail=tail,
    )
