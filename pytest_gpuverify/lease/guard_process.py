"""The guard process of :mod:`.guard` (see there). Standard library only at the top: it starts with
``python -I -S``, once per session, so it must start in milliseconds.

    python -I -S guard_process.py          (stdin: the session's channel, a SOCK_SEQPACKET socket)

Messages from the session, one per packet: ``arm ID STOP...`` with the run's lock descriptors
attached (SCM_RIGHTS: the guard holds duplicates of their open file descriptions from then on),
``done ID`` when that command is over (the guard closes its duplicates). The end of the channel with
commands still armed means the session died: each armed command is stopped (its STOP words:
``container NAME PID_FILE [RUN_ID]`` or ``host PGID [RUN_ID]``), then each armed fresh container
(``fresh NAME RUN_ID``: a `run` row's, ephemeral.py) is removed, only when it carries RUN_ID's labels,
and only then does the guard exit and the kernel drop the locks. With RUN_ID it also stops every
process carrying the run's marker (:mod:`.leftovers`):
what the command left behind in another process group or session is gone too before the locks go.
"""

import os
import signal
import socket
import sys
import threading
import time

GRACE_S = 3  # SIGTERM first, SIGKILL this much later: every stop of a command (container.py, hostrun.py)
PID_FILE_WAIT_S = 2.0  # the wrapper writes its pid file right after the exec starts
MAX_FDS = 64


def _stop_host(pgid: int) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)


# `$0` the pid file: wait for it (the wrapper may not have written it yet), then SIGTERM the
# wrapper's `timeout` (it passes the signal on), SIGKILL after the grace; the wrapper's own
# cleanup is gone with it, so the pid file is removed here.
_CONTAINER_STOP = (
    'i=0; while [ ! -s "$0" ] && [ $i -lt ' + str(int(PID_FILE_WAIT_S * 10)) + ' ]; do sleep 0.1; i=$((i+1)); done; '
    'p=$(cat "$0" 2>/dev/null); if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null; i=0; '
    'while kill -0 "$p" 2>/dev/null && [ $i -lt ' + str(GRACE_S * 10) + ' ]; do sleep 0.1; i=$((i+1)); done; '
    'kill -KILL -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; fi; rm -f "$0"'  # `timeout` leads a process group
)


def _package() -> None:
    # Started with -I -S for a fast start; the docker SDK and this package are needed only now.
    import site

    site.main()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # above the package


def _stop_container(name: str, pid_file: str, run_id: str = "") -> None:
    _package()
    try:
        from pytest_gpuverify.execute.container import ContainerHandle, docker_client
        from pytest_gpuverify.lease.leftovers import SWEEP_SH, GRACE_S as SWEEP_GRACE_S

        script = _CONTAINER_STOP
        if run_id:  # then every process of the run (no `$$` of ours carries the marker here)
            script += '; m="$1"; f="$0.guard"; ' + SWEEP_SH
        ContainerHandle(docker_client(), name).capture(["sh", "-c", script, pid_file, run_id],
                                                       timeout_s=GRACE_S + PID_FILE_WAIT_S + SWEEP_GRACE_S + 15)
    except Exception:  # the container or the engine is gone (so is the command), or no docker SDK
        pass


def _stop_host_run(run_id: str) -> None:
    _package()
    try:
        from pytest_gpuverify.lease.leftovers import stop_marked

        stop_marked(run_id)
    except Exception:
        pass


def _remove_fresh(name: str, run_id: str) -> None:
    _package()
    try:
        from pytest_gpuverify.execute.container import docker_client
        from pytest_gpuverify.place.ephemeral import remove_own

        remove_own(docker_client(), name, run_id)  # another run's container of that name stays
    except Exception:  # the engine is gone (so is the container), or no docker SDK
        pass


def stop(words: list) -> None:
    if words[:1] == ["host"] and len(words) in (2, 3):
        _stop_host(int(words[1]))
        if len(words) == 3:
            _stop_host_run(words[2])
    elif words[:1] == ["container"] and len(words) in (3, 4):
        _stop_container(*words[1:])
    elif words[:1] == ["fresh"] and len(words) == 3:
        _remove_fresh(*words[1:])


def serve(channel: socket.socket) -> int:
    armed: dict = {}  # id -> (stop words, lock descriptors)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(channel, 1 << 16, MAX_FDS)
        except InterruptedError:
            continue
        except OSError:
            msg, fds = b"", []
        if not msg:
            break  # the session's end is closed: by the session when it is over, or by its death
        words = msg.decode("utf-8", "surrogateescape").split("\0")
        if words[0] == "arm" and len(words) >= 3:
            armed[words[1]] = (words[2:], fds)
            continue
        for fd in fds:  # descriptors on any other message are not ours to keep
            os.close(fd)
        if words[0] == "done" and len(words) == 2:
            _, held = armed.pop(words[1], (None, []))
            for fd in held:
                os.close(fd)
    # Armed commands left: the session died while they ran. Stop each (at once, side by side); the
    # lock duplicates stay open until all are stopped, and go with this process.
    # Fresh containers after their commands: the command's own stop runs in the container.
    for wave in ([w for w, _ in armed.values() if w[:1] != ["fresh"]], [w for w, _ in armed.values() if w[:1] == ["fresh"]]):
        stoppers = [threading.Thread(target=stop, args=(words,)) for words in wave]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
    return 0


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the session handles Ctrl-C and says done
    channel = socket.socket(fileno=0)
    return serve(channel)


if __name__ == "__main__":
    sys.exit(main())
