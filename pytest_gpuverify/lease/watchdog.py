"""The session's watchdog, a process of its own: what lease/guard.py starts and talks to (see there).
Standard library and execute/bounds.py only at the top: it starts with ``python -I -S``, once per
session, so it must start in milliseconds. lease/guard.py starts it by module name:

    python -I -S -c "...; from pytest_gpuverify.lease.watchdog import main; main()"
                                           (stdin: the session's channel, a SOCK_SEQPACKET socket)

Messages from the session, one per packet: ``arm ID STOP...`` with the run's lock descriptors
attached (SCM_RIGHTS: the watchdog holds duplicates of their open file descriptions from then on),
``done ID`` when that command is over (it closes its duplicates). The end of the channel with
commands still armed means the session died: each armed command is stopped (its STOP words:
``container NAME PID_FILE [RUN_ID]`` or ``host PGID [RUN_ID]``), then each armed fresh container
(``fresh NAME RUN_ID``: a `run` row's, place/ephemeral.py) is removed, only when it carries RUN_ID's
labels, and only then does the watchdog exit and the kernel drop the locks. With RUN_ID it also stops
every process carrying the run's marker (execute/leftovers.py): what the command left behind in
another process group or session is gone too before the locks go.
"""

import os
import signal
import socket
import sys
import threading

from pytest_gpuverify.execute.bounds import GRACE_S, stop_group

MAX_FDS = 64


def _package() -> None:
    # Started with -I -S for a fast start; the docker SDK and the rest of the package are needed only now.
    import site

    site.main()


def _stop_container(name: str, pid_file: str, run_id: str = "") -> None:
    _package()
    try:
        from pytest_gpuverify.execute.container import STOP_SH, STOP_TIMEOUT_S, ContainerExecutor, docker_client
        from pytest_gpuverify.execute.leftovers import SWEEP_SH

        script = STOP_SH
        if run_id:  # then every process of the run (no `$$` of ours carries the marker here)
            script += '; m="$2"; f="$0.guard"; ' + SWEEP_SH
        ContainerExecutor(docker_client(), name).capture(
            ["sh", "-c", script, pid_file, str(GRACE_S), run_id], timeout_s=STOP_TIMEOUT_S + GRACE_S + 10
        )
    except Exception:  # the container or the engine is gone (so is the command), or no docker SDK
        pass


def _stop_host_run(run_id: str) -> None:
    _package()
    try:
        from pytest_gpuverify.execute.leftovers import stop_marked

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
        stop_group(int(words[1]))
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
    for wave in (
        [w for w, _ in armed.values() if w[:1] != ["fresh"]],
        [w for w, _ in armed.values() if w[:1] == ["fresh"]],
    ):
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
