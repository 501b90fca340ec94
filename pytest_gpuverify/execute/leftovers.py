"""Processes a run leaves behind: found, stopped before the GPU's lock is released, and recorded.

A command can leave a child running after it exits (a daemon, ``start_new_session=True``, ``setsid``,
``nohup ... &``); it would keep using the GPU after the lock is released, next to the next holder's
command. Every process the run starts carries the run's marker, ``GPUVERIFY_RUN_ID=<id>`` in its
environment (inherited by every descendant, whatever session or process group it moves to), and when
the command has ended, every live process whose ``/proc/<pid>/environ`` holds that marker is a
leftover: SIGTERM, SIGKILL after :data:`GRACE_S`. Only processes with the marker are ever signalled,
so nothing the run did not start is touched. A process that clears its own
environment before it detaches is not found; none of the usual ways to detach does that.

On the host this module does it (a new process since the command started is the only kind whose
environment is read). In a container the exec's wrapper does it (:data:`SWEEP_SH`), after the command
and before the exec ends, so it costs no engine call of its own; it reports each leftover on the
exec's stderr as ``gpuverify-left PID COMMAND``. Standard library and execute/bounds.py only: the
watchdog imports it (lease/watchdog.py).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable

from pytest_gpuverify.execute.bounds import GRACE_S  # a daemon's SIGTERM handler gets as long as a command's

MARKER = "GPUVERIFY_RUN_ID"
REPORT_PREFIX = "gpuverify-left "
_MAX_SHOWN = 3


def run_id_of(stamp: str, part: str = "") -> str:
    """A run's id on its host: its artifact's stamp and this process (two sessions may share a stamp),
    with ``part`` naming a step of it (``build``)."""
    return f"{stamp}-{os.getpid()}" + (f"-{part}" if part else "")


def run_marker(run_id: str) -> dict[str, str]:
    """The environment entry every process of the run inherits (unique per run on the host)."""
    import secrets

    return {MARKER: f"{run_id}-{secrets.token_hex(4)}"}


def proc_pids() -> set[int]:
    try:
        return {int(name) for name in os.listdir("/proc") if name.isdigit()}
    except OSError:
        return set()


def _marked(pid: int, needle: bytes) -> bool:
    """True while ``pid`` lives with the marker (a zombie's environ reads empty: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read().split(b"\0")
    except OSError:
        return False


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            text = fh.read(400).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text[:200] or "?"


def find_marked(run_id: str, candidates: Iterable[int] | None = None) -> dict[int, str]:
    """pid -> command of every live process carrying the run's marker (among ``candidates``)."""
    needle = f"{MARKER}={run_id}".encode()
    me = os.getpid()
    pids = proc_pids() if candidates is None else candidates
    return {pid: _command(pid) for pid in sorted(pids) if pid != me and _marked(pid, needle)}


def stop_marked(run_id: str, before: set[int] | None = None, grace_s: float = GRACE_S) -> list[str]:
    """Stop every live process of the run (SIGTERM, SIGKILL after ``grace_s``); ``"PID COMMAND"`` of
    each one found. ``before``: the pids that existed before the command started, whose environment
    is not read (None: read every process's)."""
    needle = f"{MARKER}={run_id}".encode()
    found: dict[int, str] = {}
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        # listed afresh each round: a leftover may have forked while we looked
        live = find_marked(run_id, None if before is None else proc_pids() - before)
        found.update(live)
        if not live:
            break
        for pid in live:
            _signal_if_marked(pid, needle, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_marked(pid, needle) for pid in live):
            time.sleep(0.02)
    return [f"{pid} {cmd}" for pid, cmd in sorted(found.items())]


def _signal_if_marked(pid: int, needle: bytes, sig: int) -> None:
    """Signal ``pid`` only if it is still the marked process: through a pidfd where the kernel has
    them, so a pid reused between the check and the signal is never hit."""
    pidfd = None
    try:
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(pid)
        if not _marked(pid, needle):
            return
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)


def reason(leftovers: list[str]) -> str:
    """The verdict's reason for a run that left processes behind."""
    shown = "; ".join(leftovers[:_MAX_SHOWN]) + ("; ..." if len(leftovers) > _MAX_SHOWN else "")
    return (
        f"left {len(leftovers)} processes running after the command ended ({shown}); "
        "stopped before the GPU was released"
    )


def parse_report(text: str, prefix: str = REPORT_PREFIX) -> tuple[list[str], str]:
    """(what the wrapper reported on its lines starting with ``prefix``: by default the leftovers, the
    rest of its stderr)."""
    found, rest = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith(prefix):
            found.append(line[len(prefix) :].strip())
        else:
            rest.append(line)
    return found, "".join(rest)


# The container's sweep, in POSIX sh: `$m` holds the run's id, `$f` a scratch file, `$b` the pids
# that ran before the command started (SNAPSHOT_SH; empty: all are read). Only pids new since then
# are read, with builtins alone, so a run that left nothing costs no process at all; otherwise one
# `grep -z` reads their environments (with a grep that has no -z, one `tr | grep` per process).
# /proc/[0-9]* is expanded in this shell and grep has no marker in its environment (the caller unsets
# it first), so the sweep's own helpers never list themselves; `$$` (the wrapper) is left out.
SNAPSHOT_SH = 'b=" "; for e in /proc/[0-9]*; do b="$b${e#/proc/} "; done'
SWEEP_SH = (
    'n="' + MARKER + '=$m"; '
    'list() { c=; for e in /proc/[0-9]*; do e=${e#/proc/}; case "${b:- }" in " ") c="$c /proc/$e/environ";; '
    '*" $e "*) ;; *) c="$c /proc/$e/environ";; esac; done; ps=; [ -n "$c" ] || return 0; '
    'grep -lsxzF "$n" $c > "$f" 2>/dev/null; '
    'if [ $? -gt 1 ] && [ ! -s "$f" ] && ! grep -qzF x /dev/null 2>/dev/null; then for e in $c; do '
    'tr "\\0" "\\n" < "$e" 2>/dev/null | grep -qxF "$n" && echo "$e"; done > "$f"; fi; '
    'while read -r e; do e=${e#/proc/}; e=${e%/environ}; [ "$e" = "$$" ] || ps="$ps $e"; done < "$f"; }; '
    'list; if [ -n "$ps" ]; then for e in $ps; do '
    'printf "' + REPORT_PREFIX + '%s %s\\n" "$e" "$(tr "\\0" " " < /proc/$e/cmdline 2>/dev/null | cut -c1-200)" >&2; '
    "done; kill -TERM $ps 2>/dev/null; i=0; "
    "while [ $i -lt " + str(GRACE_S * 10) + ' ]; do list; [ -n "$ps" ] || break; sleep 0.1; i=$((i+1)); done; '
    'list; [ -z "$ps" ] || kill -KILL $ps 2>/dev/null; fi; [ ! -e "$f" ] || rm -f "$f"'
)


# Whether processes of a container carry a run's marker, read in the container (where the host's user
# may not read a root process's environment): `$0` the run's id, then the pids as the container
# numbers them; one line "PID 1" (carries it) or "PID 0" per process whose environment could be read.
MARKED_SH = (
    'n="' + MARKER + '=$0"; nl="\n"; for p in "$@"; do '
    'e=$(tr "\\0" "\\n" 2>/dev/null < "/proc/$p/environ") || continue; '
    'case "$nl$e$nl" in *"$nl$n$nl"*) echo "$p 1";; *) echo "$p 0";; esac; done'
)


def marked_in_container(capture: Callable[..., tuple[int | None, bytes]], pid: int, run_id: str) -> bool | None:
    """Whether the container's process ``pid`` (its own numbering) carries the run's marker, asked
    through ``capture`` (the container executor's); None when the container could not tell."""
    code, out = capture(["sh", "-c", MARKED_SH, run_id, str(pid)], timeout_s=10.0)
    if code is None:
        return None
    for line in out.decode("utf-8", "replace").splitlines():
        if line.split() in ([str(pid), "1"], [str(pid), "0"]):
            return line.split()[1] == "1"
    return None
