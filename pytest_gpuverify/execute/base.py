"""The one interface of every place a target's command runs: :class:`Executor`.

Two executors keep it: :class:`~pytest_gpuverify.execute.container.ContainerExecutor` (the user's
container, through the Docker Engine) and :class:`~pytest_gpuverify.execute.host.HostExecutor`
(the GPU host itself, ``--gpu-container none``). For both: output streams to a file as it comes and
past :data:`~.bounds.MAX_OUTPUT_BYTES` is counted, not kept; the time limit is enforced (SIGTERM,
SIGKILL :data:`~.bounds.GRACE_S` later); Ctrl-C or SIGTERM stops the command and raises
:class:`Interrupted` with what was known; ``on_start`` gets how to stop the command from another
process (lease/watchdog.py); every process the run left behind is stopped before it returns.
tests/e2e/test_executors.py runs one calling code against both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from pytest_gpuverify.config.containers import HOST_CONTAINER


@dataclass
class ExecOutcome:
    exit_code: int | None = None
    timed_out: bool = False
    interrupted: str | None = None
    container_died: bool = False
    bytes_written: int = 0
    duration_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # "PID COMMAND" of processes the run left, stopped
    # whether any folder of ``probe`` held something just before the command started (None: not asked,
    # or the command never started): the warm compile caches' state, read in the command's own start
    caches_held: bool | None = None


@dataclass(frozen=True)
class Place:
    """Where a command runs: a container by name, or the host itself (``--gpu-container none``). A
    type, not a name, so that no container's name can be taken for the host."""

    container: str | None = None  # None: the host itself

    @property
    def on_host(self) -> bool:
        return self.container is None

    @property
    def name(self) -> str:
        """As artifacts record it: the container's name, or ``host``."""
        return HOST_CONTAINER if self.container is None else self.container

    def __str__(self) -> str:
        return "the host" if self.container is None else f"container {self.container}"


ON_HOST = Place()


class ExecutorError(Exception):
    """The place cannot run the command (a container missing or stopped, an engine that fails); the
    message says what to do. Every executor raises this, or a subclass, for such a place."""


@runtime_checkable
class Executor(Protocol):
    """Methods raise :class:`ExecutorError` when the place cannot run commands at all; a command that
    runs and fails is an outcome, not an error."""

    name: str
    place: Place
    output_cap: int  # bytes of a command's output kept in its file (bounds.MAX_OUTPUT_BYTES)

    @property
    def image(self) -> str | None: ...

    @property
    def running(self) -> bool: ...

    def inspect(self, refresh: bool = False) -> dict: ...

    def capture(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        workdir: str = "/",
        timeout_s: float = 60.0,
        limit: int = 1 << 20,
    ) -> tuple[int | None, bytes]:
        """A small command: (exit code, None when it timed out; the first ``limit`` bytes it printed)."""
        ...

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
        """The target's command, everything it prints appended to ``out_path`` as it comes; ``probe``:
        folders looked into just before it starts (:attr:`ExecOutcome.caches_held`)."""
        ...


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (its name is the argument), turned into an interruption so it takes Ctrl-C's
    path: command stopped, lock released, artifact written."""


def interrupt_cause(exc: BaseException) -> str:
    if isinstance(exc, Terminated):
        return str(exc.args[0]) if exc.args else "SIGTERM"
    return "Ctrl-C"


class Interrupted(KeyboardInterrupt):
    """Carries what was known when Ctrl-C stopped a command, so the artifact can still be written."""

    def __init__(self, outcome: ExecOutcome) -> None:
        super().__init__("interrupted")
        self.outcome = outcome
