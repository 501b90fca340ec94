"""Commands in the user's container, through the Docker Engine API's low-level exec calls.

Output streams to a file as it comes (stdout and stderr both, in arrival order) and is never held
in memory. Docker cannot kill an exec, so every command is wrapped: the wrapper writes its PID to a
file in the container and runs the command under ``timeout``; to stop it early (Ctrl-C, the host-side
watchdog) we exec a ``kill`` of that PID. We never start, stop or remove a container here.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_gpuverify.config.targets import SCRATCH_ROOT
from pytest_gpuverify.execute.base import ExecOutcome, ExecutorError, Interrupted, Place, interrupt_cause
from pytest_gpuverify.execute.bounds import GRACE_S, MAX_OUTPUT_BYTES, CappedSink, second_ctrl_c_held
from pytest_gpuverify.execute.leftovers import MARKER, SNAPSHOT_SH, SWEEP_SH, parse_report

PID_FILE_WAIT_S = 2.0  # the wrapper writes its pid file right after the exec starts

# `$0` is the pid file, `$1` the time limit. The command runs under `timeout` (SIGTERM at the limit,
# SIGKILL GRACE_S later); the pid file holds `timeout`'s PID so a later exec can stop it early,
# and the wrapper removes the pid file itself, leaving no scratch behind. The command's stderr joins
# its stdout (one stream, in order); the wrapper's own stderr carries only its report of processes
# the run left behind, which it stops before the exec ends (execute/leftovers.py).
# The folders of ``probe`` are looked into here, with builtins only, just before the command starts
# (one exec fewer than a probe of their own); the answer is a line of the wrapper's own stderr, and
# the variable that named them is gone before the command starts.
PROBE_VAR = "GPUVERIFY_CACHE_PROBE"
CACHES_PREFIX = "gpuverify-caches: "
_PROBE_SH = (
    'if [ -n "${' + PROBE_VAR + ':-}" ]; then r=fresh; for d in $' + PROBE_VAR + "; do "
    'for e in "$d"/* "$d"/.[!.]* "$d"/..?*; do if [ -e "$e" ] || [ -L "$e" ]; then r=reused; break 2; fi; done; done; '
    'echo "' + CACHES_PREFIX + '$r" >&2; fi; unset ' + PROBE_VAR
)
_PROBE_PATH = re.compile(r"/[A-Za-z0-9_./-]*")  # split by the shell on blanks, globbed: plain paths only
_WRAPPER = (
    'mkdir -p "${0%/*}" 2>/dev/null; t=$1; shift; ' + _PROBE_SH + "; " + SNAPSHOT_SH + "; "
    "if command -v timeout >/dev/null 2>&1; then timeout -k " + str(GRACE_S) + ' "$t" "$@" 2>&1 & '
    'else "$@" 2>&1 & fi; '
    'echo $! > "$0"; m=${' + MARKER + ":-}; unset " + MARKER + "; wait $!; rc=$?; "
    'if [ -n "$m" ]; then f="$0.left"; ' + SWEEP_SH + '; fi; rm -f "$0"; exit $rc'
)
MAX_WRAPPER_ERR = 1 << 20

# The one stop of a command from another exec, here and in the watchdog (lease/watchdog.py).
# `$0` the pid file, `$1` the grace in seconds: wait for the pid file (the wrapper may not have
# written it yet), SIGTERM the wrapper's `timeout` (it passes the signal on), SIGKILL its process
# group (it leads one) once the grace has passed; the wrapper's own cleanup may be gone with it, so
# the pid file is removed here.
STOP_SH = (
    'i=0; while [ ! -s "$0" ] && [ $i -lt ' + str(int(PID_FILE_WAIT_S * 10)) + " ]; do sleep 0.1; i=$((i+1)); done; "
    'p=$(cat "$0" 2>/dev/null); if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null; i=0; '
    'while kill -0 "$p" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i+1)); done; '
    'kill -KILL -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; fi; rm -f "$0"'
)
STOP_TIMEOUT_S = GRACE_S + PID_FILE_WAIT_S + 5


class ContainerError(ExecutorError):
    """The container is unusable (missing, stopped, not the user's). The message says what to do."""


def engine_errors() -> tuple[type[BaseException], ...]:
    """What a call to the Docker engine raises when the engine fails: the SDK's own errors, and
    requests' when the daemon is gone or stops answering (the SDK does not wrap those)."""
    import docker.errors
    import requests.exceptions

    return docker.errors.DockerException, requests.exceptions.RequestException


def quiet_docker_import() -> None:
    """Import requests (what the docker SDK stands on) now, in the main thread. Its import tries
    urllib3's SOCKS support, which warns without PySocks; requests silences that with a filter it
    sets just before. Run in one of the session's threads while pytest's main thread leaves a
    ``catch_warnings`` block, the filter can be lost in between, and the warning lands in the user's
    warnings summary. Imported here (before the session starts a thread) under a filter of our
    own, it warns nowhere, and later imports find it imported."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="SOCKS support in urllib3")
        import requests  # noqa: F401


def docker_client(base_url: str | None = None, timeout: int = 60) -> Any:
    import docker  # imported here: collection must stay fast and work without a daemon

    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout)
    return docker.from_env(timeout=timeout)


class ContainerExecutor:
    """One of the user's containers, as an :class:`~.base.Executor`. Created once per container per
    session."""

    output_cap = MAX_OUTPUT_BYTES

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self.place = Place(name)
        self._attrs: dict | None = None

    # -- state -----------------------------------------------------------------------------
    def inspect(self, refresh: bool = False) -> dict:
        import docker.errors

        if self._attrs is None or refresh:
            try:
                self._attrs = self.client.api.inspect_container(self.name)
            except docker.errors.NotFound:
                raise ContainerError(f"container {self.name!r} does not exist on this host") from None
            except engine_errors() as exc:
                raise ContainerError(f"cannot inspect container {self.name!r}: {exc}") from None
        return self._attrs

    @property
    def running(self) -> bool:
        return bool(self.inspect(refresh=True).get("State", {}).get("Running"))

    @property
    def image(self) -> str | None:
        return (self.inspect().get("Config") or {}).get("Image")

    # -- exec ------------------------------------------------------------------------------
    def capture(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        workdir: str = "/",
        timeout_s: float = 60.0,
        limit: int = 1 << 20,
    ) -> tuple[int | None, bytes]:
        """Run a small command and return (exit code, first ``limit`` bytes of its output)."""
        chunks: list[bytes] = []
        outcome = self._exec(argv, env, workdir, timeout_s, CappedSink(chunks.append, limit))
        if outcome.timed_out:
            return None, b"".join(chunks)
        return outcome.exit_code, b"".join(chunks)

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
        """Run the target's command, appending everything it prints to ``out_path`` as it comes.
        ``on_start`` gets, once it runs, how to stop it from elsewhere (see lease/guard.py)."""
        with open(out_path, "ab", buffering=0) as fh:
            sink = CappedSink(fh.write, self.output_cap, echo)
            try:
                outcome = self._exec(argv, env, workdir, timeout_s, sink, on_start, probe)
            except Interrupted as stopped:
                stopped.outcome.bytes_written = sink.kept  # as the host's says (base.py)
                raise
        outcome.bytes_written = sink.kept
        if problem := sink.problem():
            outcome.problems.append(problem)
        return outcome

    def _exec(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        workdir: str,
        timeout_s: float,
        sink: Callable[[bytes], None],
        on_start: Callable[[list[str]], None] | None = None,
        probe: Sequence[str] = (),
    ) -> ExecOutcome:
        api = self.client.api
        pid_file = f"{SCRATCH_ROOT}/{uuid.uuid4().hex}.pid"
        limit = max(1, int(round(timeout_s)))
        wrapped = ["sh", "-c", _WRAPPER, pid_file, str(limit), *argv]
        outcome = ExecOutcome()
        environment = dict(env or {})
        if probe and all(_PROBE_PATH.fullmatch(folder) for folder in probe):  # else not asked: None
            environment[PROBE_VAR] = " ".join(probe)
        started = time.monotonic()
        try:
            exec_id = api.exec_create(
                self.name, wrapped, stdout=True, stderr=True, environment=environment, workdir=workdir
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except engine_errors() as exc:
            raise ContainerError(f"cannot exec in container {self.name!r}: {exc}") from None
        marker = (env or {}).get(MARKER)
        reader_error: list[BaseException] = []
        wrapper_err = bytearray()

        def pump() -> None:
            try:
                for out, err in stream:
                    if out:
                        sink(out)
                    if err and len(wrapper_err) < MAX_WRAPPER_ERR:
                        wrapper_err.extend(err)
            except BaseException as exc:  # a broken stream is recorded, never raised in a thread
                reader_error.append(exc)

        def take_report() -> None:
            outcome.leftovers, rest = parse_report(bytes(wrapper_err).decode("utf-8", "replace"))
            answers, rest = parse_report(rest, CACHES_PREFIX)
            outcome.caches_held = answers[-1] == "reused" if answers else None
            if rest:
                sink(rest.encode())  # the wrapper's own complaints, as before: in the output

        reader = threading.Thread(target=pump, name=f"gpuverify-exec-{self.name}", daemon=True)
        # The wrapper's `timeout` stops the command itself; this watchdog only covers a wrapper that
        # could not run `timeout` or a daemon that stopped answering.
        hard_deadline = started + limit + GRACE_S + 2
        try:  # from the exec's start on: a Ctrl-C at any point stops the command
            if on_start is not None:
                on_start(["container", self.name, pid_file, *([marker] if marker else [])])
            reader.start()
            while reader.is_alive():
                reader.join(timeout=0.2)
                if time.monotonic() > hard_deadline and reader.is_alive():
                    outcome.timed_out = True
                    self._stop(pid_file, grace_s=0)
                    reader.join(timeout=5)
                    break
        except KeyboardInterrupt as exc:
            outcome.interrupted = interrupt_cause(exc)
            self._stop_quietly(pid_file)
            if reader.is_alive():
                reader.join(timeout=GRACE_S + 2)  # the exec ends once the wrapper has swept and reported
            take_report()
            self._finish(exec_id, outcome, started, limit)
            raise Interrupted(outcome) from None
        except BaseException:  # a bug of ours (on_start's, say): the command must not outlive its GPU's lock
            self._stop_quietly(pid_file)
            raise
        take_report()
        if reader_error:
            outcome.problems.append(f"output stream broke: {type(reader_error[0]).__name__}: {reader_error[0]}")
        self._finish(exec_id, outcome, started, limit)
        return outcome

    def _finish(self, exec_id: str, outcome: ExecOutcome, started: float, limit: int) -> None:
        info: dict = {}
        pause = 0.002  # the stream can end a moment before the engine records the exit: look again
        deadline = time.monotonic() + 2.5  # soon at first (this wait sits between two targets), then every 50 ms
        while True:
            try:
                info = self.client.api.exec_inspect(exec_id)
            except engine_errors():  # the engine is gone: no exit code; the container is looked at below
                break
            if not info.get("Running") or time.monotonic() > deadline:
                break
            time.sleep(pause)
            pause = min(0.05, pause * 2)
        outcome.duration_s = time.monotonic() - started
        if info.get("Running") is False:
            outcome.exit_code = info.get("ExitCode")
        # `timeout` exits 124 (TERM) or 137 (KILL); only trust that reading when the limit really passed
        if outcome.exit_code in (124, 137) and outcome.duration_s >= limit - 0.5:
            outcome.timed_out = True
        # A killed container ends the exec with 137 a moment before the engine marks it stopped:
        # for an exit that looks like a kill, look again before calling it the command's own.
        # An exit 0 is the command's own (a container that dies ends its execs with a kill's code or
        # none): no look at the container then, one engine call less per target.
        looks_killed = outcome.exit_code in (None, 137, 143) and not outcome.timed_out
        for _ in range(20 if looks_killed else 0 if outcome.exit_code == 0 else 1):
            try:
                if not self.running:
                    outcome.container_died = True
                    break
            except ContainerError:
                outcome.container_died = True
                break
            if looks_killed:
                time.sleep(0.1)

    def _stop(self, pid_file: str, grace_s: int = GRACE_S) -> None:
        try:
            self.capture(["sh", "-c", STOP_SH, pid_file, str(grace_s)], timeout_s=STOP_TIMEOUT_S)
        except ContainerError:
            pass

    def _stop_quietly(self, pid_file: str) -> None:
        """SIGTERM through `timeout` (it forwards it to the command); SIGKILL once the grace has passed."""
        with second_ctrl_c_held():
            self._stop(pid_file)
