"""A guard per running command: if the session dies while its command runs (``kill -9``, the OOM
killer), the guard stops the command and only then lets the GPU locks go.

Without it the kernel would drop the locks with the session at once, while the command (in the
container, or in its own process group on the host) ran on: the next session could take the GPU
during the command's JIT build, before the GPU looked busy, and two commands would share it.

The guard (:mod:`.guard_process`) is a small process started right after the command, in its own session (a Ctrl-C at the
terminal is the session's to handle). It holds duplicates of the locks' open file descriptions
(``pass_fds``), so the locks stay taken while it lives, and blocks reading a pipe from the session.
The session writes ``done`` and closes the pipe when the command is over (its own release unlocks
at once: ``LOCK_UN`` acts on the shared description). An end of the pipe without ``done`` means the
session died: the guard stops the command (SIGTERM, SIGKILL after the grace), then exits, and the
kernel drops the locks with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

GUARD_PROCESS = Path(__file__).with_name("guard_process.py")
# It starts beside the command it guards: at a lower priority, the command's own start goes first.
_NICE = ["/usr/bin/nice", "-n", "10"] if os.access("/usr/bin/nice", os.X_OK) else []


class RunGuard:
    """The session's end of one guard."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    @classmethod
    def start(cls, stop: Sequence[str], lock_fds: Sequence[int]) -> Optional["RunGuard"]:
        """A guard for the command ``stop`` names; None when it cannot start (the run goes on
        unguarded, as before guards existed: a kill -9 then frees the locks at once)."""
        try:
            proc = subprocess.Popen(
                [*_NICE, sys.executable, "-I", "-S", str(GUARD_PROCESS), *stop],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=tuple(lock_fds), start_new_session=True,
            )
        except OSError:
            return None
        return cls(proc)

    def done(self) -> None:
        """The command is over and the session lives: the guard leaves without doing anything."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"done\n")
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass  # it died already; nothing of ours is left for it to stop

    @property
    def pid(self) -> int:
        return self.proc.pid


class RunGuards:
    """The guards of one run (one per command it starts), over the run's lock descriptors.
    ``on_start`` is what an executor calls with its command's stop spec once the command runs."""

    def __init__(self, lock_fds: Sequence[int]) -> None:
        self.lock_fds = list(lock_fds)
        self.guards: list[RunGuard] = []

    def on_start(self, stop: Sequence[str]) -> None:
        guard = RunGuard.start(stop, self.lock_fds)
        if guard is not None:
            self.guards.append(guard)

    def done(self) -> None:
        """Tell every guard the run is over (before the locks are released: it must not outlive them
        still armed)."""
        for guard in self.guards:
            guard.done()

    def reap(self, timeout_s: float = 5.0) -> None:
        """Collect the guards' exits (after the release: their exit is not on the handoff's path)."""
        for guard in self.guards:
            try:
                guard.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass  # still reading its pipe after done: it exits on its own, nothing to stop
        self.guards.clear()
