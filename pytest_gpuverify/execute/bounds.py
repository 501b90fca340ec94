"""What bounds a command wherever it runs, defined once for every runner: the grace between SIGTERM
and SIGKILL, the cap on the output kept, the scratch folder inside a container, and how a process
group on this host is stopped.

Its users: the executors (container.py, host.py), the GPU tools' runner (host_commands.py), the
sweep of what a run leaves behind (execute/leftovers.py) and the watchdog that stops a command when
the session dies (lease/watchdog.py). Standard library only and no ``typing`` at run time: the
watchdog imports it in its first milliseconds (``python -I -S``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager

TYPE_CHECKING = False  # typing's own import would cost the watchdog's start more than the rest of it
if TYPE_CHECKING:
    from collections.abc import Callable

# SIGTERM first, SIGKILL this much later: every stop of a command (its time limit, Ctrl-C, the
# session's death) and of a process it left behind, so a command is gone within --gpu-timeout + 5 s.
GRACE_S = 3
KILL_WAIT_S = 5  # after SIGKILL, how long a stop waits for the group to be gone
MAX_OUTPUT_BYTES = 4 << 30  # past this a run's output file stops growing; the run is then not trusted


class CappedSink:
    """Hands what a command prints to ``write`` up to ``cap`` bytes and counts the rest; ``echo``
    sees everything. Output is never held here, so a command printing without end costs no memory."""

    def __init__(
        self, write: Callable[[bytes], object], cap: int = MAX_OUTPUT_BYTES, echo: Callable[[bytes], None] | None = None
    ) -> None:
        self.write, self.cap, self.echo = write, cap, echo
        self.seen = 0

    def __call__(self, data: bytes) -> None:
        if self.seen < self.cap:
            self.write(data[: self.cap - self.seen])
        self.seen += len(data)
        if self.echo is not None:
            self.echo(data)

    @property
    def kept(self) -> int:
        return min(self.seen, self.cap)

    def problem(self) -> str | None:
        """Why the output kept is not all of it; None when it is."""
        if self.seen <= self.cap:
            return None
        size = f"{self.cap >> 30} GiB" if self.cap >= 1 << 30 else f"{self.cap} bytes"
        return f"output passed {size}; the rest was not saved"


@contextmanager
def second_ctrl_c_held():
    """While a stopped command is being stopped and swept: a second Ctrl-C must not cut that short
    (the command would run on with its GPU let go). SIGINT is ignored meanwhile, in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the process group; False when there is none (left already, or not ours)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_group(pgid: int) -> None:
    signal_group(pgid, signal.SIGKILL)


def stop_group(pgid: int, gone: Callable[[float], bool] | None = None, grace_s: float = GRACE_S) -> None:
    """SIGTERM to a command's process group, SIGKILL if it is still there after ``grace_s``.

    ``gone(wait_s)`` waits up to ``wait_s`` and says whether the command is over. The process that
    started the command passes a wait for its child (to the group its unreaped leader would look
    alive for ever); anyone else gets the default, a look at the group every 50 ms."""
    wait_gone = gone if gone is not None else (lambda wait_s: _group_gone(pgid, wait_s))
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        if not signal_group(pgid, sig) or wait_gone(wait_s):
            return


def _group_gone(pgid: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while signal_group(pgid, 0):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
