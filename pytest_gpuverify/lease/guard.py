"""The session's guard: if the session dies while a command runs (``kill -9``, the OOM killer), its
watchdog process stops the command and only then lets the GPU locks go.

Without it the kernel would drop the locks with the session at once, while the command (in the
container, or in its own process group on the host) ran on: the next session could take the GPU
during the command's JIT build, before the GPU looked busy, and two commands would share it.

The watchdog (lease/watchdog.py) is one small process per session, started once (a Python start per
command cost more than the rest of the plugin's per-target work: bench/results/overhead.txt), in its own
session (a Ctrl-C at the terminal is the session's to handle). Its stdin is one end of a
``SOCK_SEQPACKET`` socket pair; the session keeps the other (close-on-exec: no command inherits it).
When a command starts, the session sends ``arm`` with duplicates of the run's lock descriptors
(SCM_RIGHTS), so the locks stay taken while the watchdog lives; in flight they are held by its
socket already. When the command is over the session sends ``done`` before its own release, which
unlocks at once (``LOCK_UN`` acts on the shared open file description). The channel's end with a
command still armed means the session died: the watchdog stops the command (SIGTERM, SIGKILL after
the grace), then exits, and the kernel drops the locks with it.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

# By module name from this checkout (lease/watchdog.py): -I keeps the user's PYTHONPATH and site out,
# -S makes its start fast (it loads site only when it has something to stop). Appended, not put first:
# for an installed package that folder is site-packages, whose backports must not shadow the stdlib.
WATCHDOG_ARGV = [
    "-I",
    "-S",
    "-c",
    f"import sys; sys.path.append({str(Path(__file__).parents[2])!r}); "
    "from pytest_gpuverify.lease.watchdog import main; sys.exit(main())",
]
# It starts beside the session's work: at a lower priority, a command's own start goes first.
_NICE = ["/usr/bin/nice", "-n", "10"] if os.access("/usr/bin/nice", os.X_OK) else []


class SessionGuard:
    """The session's end of its watchdog process. Thread-safe; :meth:`close` at the session's end."""

    def __init__(self, proc: subprocess.Popen, channel: socket.socket) -> None:
        self.proc = proc
        # closing it is what the session's death looks like to the watchdog; a socket, where Popen's type says a file
        self.proc.stdin = channel  # type: ignore[assignment]
        self._channel = channel
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._armed: set[str] = set()  # commands the watchdog would stop if the channel ended now

    @classmethod
    def start(cls) -> SessionGuard | None:
        """A running guard; None when it cannot start (runs go on unguarded, as before guards
        existed: a kill -9 then frees the locks at once)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen(
                [*_NICE, sys.executable, *WATCHDOG_ARGV],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        return cls(proc, ours)

    def arm(self, stop: Sequence[str], lock_fds: Sequence[int]) -> str | None:
        """Guard a command that now runs: ``stop`` says how to stop it. Returns its id, None when the
        guard is gone."""
        with self._lock:
            ident = str(next(self._ids))
            try:
                socket.send_fds(self._channel, ["\0".join(["arm", ident, *stop]).encode()], list(lock_fds))
            except OSError:
                return None
            self._armed.add(ident)
        return ident

    def disarm(self, ident: str | None) -> None:
        """The command is over and the session lives: the watchdog lets go of its lock duplicates."""
        if ident is None:
            return
        with self._lock:
            self._armed.discard(ident)
            try:
                self._channel.sendall(f"done\0{ident}".encode())
            except OSError:
                pass  # it died already; nothing of ours is left for it to stop

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self._channel.fileno() >= 0

    def close(self, timeout_s: float = 5.0) -> None:
        """The session is over. With nothing armed the watchdog exits on its own, holding nothing (a
        disarmed command's locks were let go by the session's own unlock): not waited for, its exit
        is not the session's time (about 10 ms). A command still armed is stopped by the watchdog
        first: that is waited for, up to ``timeout_s``."""
        with self._lock:
            armed = bool(self._armed)
            self._channel.close()
        if not armed:
            return
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass  # it goes on stopping, and exits when done

    @property
    def pid(self) -> int:
        return self.proc.pid


class RunGuard:
    """One command's guard: a guard of its own, armed once (the per-command form, for callers
    outside a session)."""

    def __init__(self, guard: SessionGuard, ident: str | None) -> None:
        self.guard, self.ident = guard, ident
        self.proc = guard.proc

    @classmethod
    def start(cls, stop: Sequence[str], lock_fds: Sequence[int]) -> RunGuard | None:
        guard = SessionGuard.start()
        if guard is None:
            return None
        return cls(guard, guard.arm(stop, lock_fds))

    def done(self) -> None:
        self.guard.disarm(self.ident)
        self.guard.close(timeout_s=0)

    @property
    def pid(self) -> int:
        return self.proc.pid


class RunGuards:
    """The guarding of one run (each command it starts) by the session's guard, over the run's lock
    descriptors. ``on_start`` is what an executor calls with its command's stop spec once it runs."""

    def __init__(self, guard: SessionGuard | None, lock_fds: Sequence[int]) -> None:
        self.guard = guard
        self.lock_fds = list(lock_fds)
        self.armed: list[str] = []

    def on_start(self, stop: Sequence[str]) -> None:
        if self.guard is None:
            return
        ident = self.guard.arm(stop, self.lock_fds)
        if ident is not None:
            self.armed.append(ident)

    def done(self) -> None:
        """Tell the guard the run is over (before the locks are released: it must not outlive them
        still armed)."""
        for ident in self.armed:
            assert self.guard is not None
            self.guard.disarm(ident)
        self.armed.clear()
