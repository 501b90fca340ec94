"""Which processes on a held GPU are the run's own: the run's process tree, nothing else.

The run's command starts from one root process: on the host the command itself (its own session,
``start_new_session``), in a container the exec's wrapper (``sh -c WRAPPER PID_FILE ...``; the engine
starts every exec as a session leader). A process is the run's when, looked at from the host's
``/proc`` (readable by every user):

- it is the root or descends from it (``ppid`` chain in ``/proc/<pid>/stat``);
- its session is the root's (a child that detached with a double fork keeps its session: its parent
  is the container's init then, or the host's subreaper);
- else, where its environment can be read (ours, or any as root), it carries the run's marker
  ``GPUVERIFY_RUN_ID`` (a child that started a session of its own with ``setsid``);
- else, for a process of the run's container whose environment the host cannot read (a session user
  that is not root, and the container's processes run as root), the container is asked: one exec
  that reads that environment there.

Every other process is another's, wherever it lives: another ``docker exec`` shell or notebook in
the same long-lived container is as foreign as another user's job on the host. Where nothing can
tell (another pid namespace, a process gone before it was looked at, a container that cannot be
asked), the answer is None, "not visible": never the run's.

The container's root is found by its command line, which names the exec's own pid file (a random
name): first among the candidate's ancestors and session leader, then kept for the rest of the run.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Sequence

# (the process's pid in the container's namespace, the run's marker) -> carries it; None: cannot tell
AskContainer = Callable[[int, str], bool | None]

_MAX_ANCESTRY = 64  # a process tree deeper than this is not a command's
_MAX_ASKS = 4  # execs into the container per command: a crowd of other jobs is not asked about one by one


class OwnProcesses:
    """Set from the executor's stop spec once the command runs (``["host", PID, MARKER?]``,
    ``["container", NAME, PID_FILE, MARKER?]``); :meth:`is_own` sorts a pid the GPU readings list."""

    def __init__(self, container_id: str | None = None, proc: str = "/proc", ask: AskContainer | None = None) -> None:
        self.container_id, self._proc, self._ask = container_id, proc, ask
        self.root_pid: int | None = None
        self._token: bytes | None = None  # the container's root names it on its command line
        self._marker: str | None = None
        self._known: dict[int, bool | None] = {}
        self._asks = 0

    def started(self, spec: Sequence[str]) -> None:
        if spec and spec[0] == "host" and len(spec) > 1 and spec[1].isdigit():
            self.root_pid = int(spec[1])
            self._marker = spec[2] if len(spec) > 2 and spec[2] else None
        elif spec and spec[0] == "container" and len(spec) > 2:
            self._token = spec[2].encode()
            self._marker = spec[3] if len(spec) > 3 and spec[3] else None

    def is_own(self, pid: int) -> bool | None:
        """True: the run's; False: another's; None: not visible from here. Decided once per pid (at
        first sight once the command has started: before that nothing is the run's yet)."""
        if pid in self._known:
            return self._known[pid]
        answer = self._decide(pid)
        if self.root_pid is not None or self._token is not None:
            self._known[pid] = answer
        return answer

    def _decide(self, pid: int) -> bool | None:
        if pid == os.getpid():  # the session itself (a host conftest that set up CUDA): not another's job
            return True
        stat = _stat(self._proc, pid)
        if stat is None:
            return None  # another pid namespace, or gone
        if self.root_pid is None and self._token is None:
            return False  # the command has not started: nothing on the GPU is its yet
        if self._in_tree(pid, stat):
            return True
        marked = self._marked(pid)
        if marked is not None:
            return marked
        # its environment is not ours to read: only a process of the run's container may still be the run's
        if self.container_id and self._in_container(pid):
            return self._ask_container(pid)
        return False  # another user's process outside the run's place: the run's processes are ours

    def _in_tree(self, pid: int, stat: tuple[int, int]) -> bool:
        if self.root_pid is None and self._token is None:
            return False
        if self.root_pid is not None and stat[1] == self.root_pid:  # the root's session (it leads one)
            return True
        here: int | None = pid
        for _ in range(_MAX_ANCESTRY):
            if here is None or here <= 1:
                break
            if self._is_root(here):
                return True
            up = _stat(self._proc, here)
            here = up[0] if up is not None else None
        # a detached child keeps the root's session (the container's root found by its leader's command line)
        return stat[1] > 1 and self._is_root(stat[1])

    def _is_root(self, pid: int) -> bool:
        if pid == self.root_pid:
            return True
        if self.root_pid is not None or self._token is None:
            return False
        try:
            with open(f"{self._proc}/{pid}/cmdline", "rb") as fh:
                argv = fh.read(1 << 16).split(b"\0")
        except OSError:
            return False
        if self._token in argv:
            self.root_pid = pid
            return True
        return False

    def _marked(self, pid: int) -> bool | None:
        """Whether it carries the run's marker; None where its environment cannot be read."""
        if self._marker is None:
            return None
        try:
            with open(f"{self._proc}/{pid}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            return None
        return f"GPUVERIFY_RUN_ID={self._marker}".encode() in environ.split(b"\0")

    def _in_container(self, pid: int) -> bool:
        try:
            with open(f"{self._proc}/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
                return bool(self.container_id) and str(self.container_id) in fh.read()
        except OSError:
            return False

    def _ask_container(self, pid: int) -> bool | None:
        inner = _inner_pid(self._proc, pid)
        if self._ask is None or self._marker is None or inner is None or self._asks >= _MAX_ASKS:
            return None
        self._asks += 1
        try:
            return self._ask(inner, self._marker)
        except Exception:  # the engine is gone, or the exec failed: not visible, never a crash of the watch
            return None

    def user(self, pid: int) -> str | None:
        try:
            uid = os.stat(f"{self._proc}/{pid}").st_uid
            return pwd.getpwuid(uid).pw_name
        except (OSError, KeyError):
            return None


def _stat(proc: str, pid: int) -> tuple[int, int] | None:
    """(ppid, session id) of ``pid``, from ``/proc/<pid>/stat`` (readable by every user)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # after "(comm)": state, ppid, pgrp, session
        return int(fields[1]), int(fields[3])
    except (OSError, ValueError, IndexError):
        return None


def _inner_pid(proc: str, pid: int) -> int | None:
    """``pid`` as its own (innermost) pid namespace numbers it: the container's, for a container's process."""
    try:
        with open(f"{proc}/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"NSpid:"):
                    ids = line.split()[1:]
                    return int(ids[-1]) if len(ids) > 1 else None
    except (OSError, ValueError):
        pass
    return None
