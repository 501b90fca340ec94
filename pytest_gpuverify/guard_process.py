"""The guard process of :mod:`.guard` (see there). Standard library only at the top: it starts
with ``python -I -S`` beside every command, so it must start in milliseconds.

    python -I -S guard_process.py container NAME PID_FILE
    python -I -S guard_process.py host PGID
"""

import os
import signal
import sys
import time

GRACE_S = 3  # SIGTERM first, SIGKILL this much later: every stop of a command (container.py, hostrun.py)
PID_FILE_WAIT_S = 2.0  # the wrapper writes its pid file right after the exec starts


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
    'p=$(cat "$0" 2>/dev/null) || exit 0; [ -n "$p" ] || exit 0; kill -TERM "$p" 2>/dev/null; i=0; '
    'while kill -0 "$p" 2>/dev/null && [ $i -lt ' + str(GRACE_S * 10) + ' ]; do sleep 0.1; i=$((i+1)); done; '
    'kill -KILL -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; rm -f "$0"'  # `timeout` leads a process group
)


def _stop_container(name: str, pid_file: str) -> None:
    # Started with -I -S for a fast start; the docker SDK and this package are needed only now.
    import site

    site.main()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        from pytest_gpuverify.container import ContainerHandle, docker_client

        ContainerHandle(docker_client(), name).capture(["sh", "-c", _CONTAINER_STOP, pid_file],
                                                       timeout_s=GRACE_S + PID_FILE_WAIT_S + 10)
    except Exception:  # the container or the engine is gone (so is the command), or no docker SDK
        pass


def main(argv: list) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the session handles Ctrl-C and says done
    said = sys.stdin.buffer.read()  # blocks until the session says done, or dies
    if said.startswith(b"done"):
        return 0
    if argv[:1] == ["host"] and len(argv) == 2:
        _stop_host(int(argv[1]))
    elif argv[:1] == ["container"] and len(argv) == 3:
        _stop_container(argv[1], argv[2])
    else:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
