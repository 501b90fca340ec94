"""The guard process of :mod:`.guard` (see there). Standard library only at the top: it starts
with ``python -I -S`` beside every command, so it must start in milliseconds.

    python -I -S guard_process.py container NAME PID_FILE [RUN_ID]
    python -I -S guard_process.py host PGID [RUN_ID]

With RUN_ID it also stops every process carrying the run's marker (:mod:`.leftovers`): what the
command left behind in another process group or session is gone too before the locks go.
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
    'p=$(cat "$0" 2>/dev/null); if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null; i=0; '
    'while kill -0 "$p" 2>/dev/null && [ $i -lt ' + str(GRACE_S * 10) + ' ]; do sleep 0.1; i=$((i+1)); done; '
    'kill -KILL -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; fi; rm -f "$0"'  # `timeout` leads a process group
)


def _package() -> None:
    # Started with -I -S for a fast start; the docker SDK and this package are needed only now.
    import site

    site.main()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stop_container(name: str, pid_file: str, run_id: str = "") -> None:
    _package()
    try:
        from pytest_gpuverify.container import ContainerHandle, docker_client
        from pytest_gpuverify.leftovers import SWEEP_SH, GRACE_S as SWEEP_GRACE_S

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
        from pytest_gpuverify.leftovers import stop_marked

        stop_marked(run_id)
    except Exception:
        pass


def main(argv: list) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the session handles Ctrl-C and says done
    said = sys.stdin.buffer.read()  # blocks until the session says done, or dies
    if said.startswith(b"done"):
        return 0
    if argv[:1] == ["host"] and len(argv) in (2, 3):
        _stop_host(int(argv[1]))
        if len(argv) == 3:
            _stop_host_run(argv[2])
    elif argv[:1] == ["container"] and len(argv) in (3, 4):
        _stop_container(*argv[1:])
    else:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
