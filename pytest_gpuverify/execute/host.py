"""A target's command on the GPU host itself (``--gpu-container none``).

For GPU CI jobs that already run inside a container, and hosts without Docker. The interface is the
:class:`~pytest_gpuverify.execute.base.Executor`'s; here also the GPU lock is never inherited (the
lock's descriptor is close-on-exec and ``close_fds`` stays on).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_gpuverify.common.files import holds_anything
from pytest_gpuverify.common.threads import environ_copy
from pytest_gpuverify.config.containers import HOST_CONTAINER
from pytest_gpuverify.execute.base import ON_HOST, ExecOutcome, Interrupted, interrupt_cause
from pytest_gpuverify.execute.bounds import MAX_OUTPUT_BYTES, CappedSink, second_ctrl_c_held, stop_group
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.execute.leftovers import MARKER, proc_pids, stop_marked


class HostExecutor:
    """This machine, as an :class:`~.base.Executor`: each command in its own process group, so the
    whole tree can be stopped."""

    name = HOST_CONTAINER
    place = ON_HOST
    image = None
    output_cap = MAX_OUTPUT_BYTES

    @property
    def running(self) -> bool:
        return True

    def inspect(self, refresh: bool = False) -> dict:
        return {"Config": {"Env": [f"{k}={v}" for k, v in environ_copy().items()]}}

    def capture(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        workdir: str = "/",
        timeout_s: float = 60.0,
        limit: int = 1 << 20,
    ) -> tuple[int | None, bytes]:
        # the host's one bounded runner: its own process group, killed whole at the time limit
        res = LocalHost().run(argv, timeout=timeout_s, env=env, cwd=workdir)
        if res.missing:
            return 127, (res.stderr or f"cannot start {argv[0]} in {workdir}: not found".encode())[:limit]
        if res.timed_out:
            return None, res.stdout[:limit]
        return res.returncode, (res.stdout + res.stderr)[:limit]

    def stream_to_file(
        self,
        argv: Sequence[str],
        out_path: Path,
        env: Mapping[str, str] | None = None,
        workdir: str = "/",
        timeout_s: float = 3600.0,
        echo: Callable[[bytes], None] | None = None,
        on_start: Callable[[list[str]], None] | None = None,
        probe: Sequence[str] = (),
    ) -> ExecOutcome:
        outcome = ExecOutcome()
        marker = (env or {}).get(MARKER)
        before = proc_pids() if marker else set()  # only processes new since now can be the run's
        if probe:
            outcome.caches_held = holds_anything(probe)
        started = time.monotonic()
        with open(out_path, "ab", buffering=0) as fh:
            try:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=workdir,
                    env={**environ_copy(), **(env or {})},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                fh.write(f"gpuverify: cannot start {argv[0]}: {exc}\n".encode())
                outcome.exit_code = 127
                return outcome
            sink = CappedSink(fh.write, self.output_cap, echo)

            def pump() -> None:
                assert proc.stdout is not None
                # a BufferedReader (bufsize -1), which has read1; Popen's type says IO[bytes]
                while chunk := proc.stdout.read1(1 << 16):  # type: ignore[attr-defined]
                    sink(chunk)

            reader = threading.Thread(target=pump, name="gpuverify-host-run", daemon=True)

            def on_timeout() -> None:
                outcome.timed_out = True
                _stop(proc)

            # A blocking wait with a timer, not wait(timeout=...): the latter polls with sleeps of up
            # to 50 ms, and that delay would sit between a command's exit and the GPU's release.
            timer = threading.Timer(timeout_s, on_timeout)
            timer.daemon = True
            try:  # from the command's start on: a Ctrl-C at any point stops it
                if on_start is not None:
                    # its process group (start_new_session), and the marker of every process it starts
                    on_start(["host", str(proc.pid), *([marker] if marker else [])])
                reader.start()
                timer.start()
                try:
                    proc.wait()
                finally:
                    timer.cancel()
                if marker:  # before the output is drained: a leftover may hold the pipe open
                    outcome.leftovers = stop_marked(marker, before)
            except KeyboardInterrupt as exc:
                timer.cancel()
                outcome.interrupted = interrupt_cause(exc)
                outcome.leftovers = _stop_all(proc, marker, before)
                if reader.is_alive():
                    reader.join(timeout=5)
                outcome.exit_code = proc.returncode
                outcome.duration_s = time.monotonic() - started
                outcome.bytes_written = sink.kept
                raise Interrupted(outcome) from None
            except BaseException:  # a bug of ours (on_start's, say): the command must not outlive its GPU's lock
                timer.cancel()
                _stop_all(proc, marker, before)
                raise
            reader.join(timeout=5)
        outcome.exit_code = proc.returncode
        outcome.duration_s = time.monotonic() - started
        outcome.bytes_written = sink.kept
        if problem := sink.problem():
            outcome.problems.append(problem)
        return outcome


def _stop_all(proc: subprocess.Popen, marker: str | None, before: set[int]) -> list[str]:
    """The command's group, then what it left (its marked processes); a second Ctrl-C held off."""
    with second_ctrl_c_held():
        _stop(proc)
        return stop_marked(marker, before) if marker else []


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's whole process group, SIGKILL if it lingers."""

    def exited(wait_s: float) -> bool:
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    stop_group(proc.pid, exited)
