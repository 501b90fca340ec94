"""The live wait line of a worker on a GPU host, shown on the controller's terminal.

xdist carries no output from its workers, and its own channel takes only xdist's events. So the
controller opens a second execnet channel on each worker's gateway, before xdist starts the worker
there (``pytest_xdist_newgateway``): a tiny ``remote_exec`` makes a new channel on the host, keeps it
in this module (the worker's process imports the same module later) and sends it back. The worker's
picker then sends its wait lines on it; the controller writes each on its live line."""

from __future__ import annotations

from collections.abc import Callable

CHANNEL = None  # on a worker: the channel to the controller (set by OPEN_ON_HOST)

OPEN_ON_HOST = """
import pytest_gpuverify.remote.waitline as waitline
waitline.CHANNEL = channel.gateway.newchannel()
channel.send(waitline.CHANNEL)
"""

OPEN_TIMEOUT_S = 30.0
FOLDER = "result-folder"  # a worker's (FOLDER, path, since) message: where it writes its files on its host,
# and the host's UTC stamp before its first target's (so an older session's log there is never taken for its)


def open_on_gateway(
    gateway, show: Callable[[str], None], on_folder: Callable[[str, str | None], None] | None = None
) -> str | None:
    """Controller: open the wait line's channel of the worker on ``gateway``; None, else why not (the
    run goes on without the line: it is only shown, never evidence). ``on_folder`` gets the worker's
    result folder on its host, when it says it (``send_folder``)."""

    def received(message) -> None:
        if isinstance(message, tuple) and len(message) in (2, 3) and message[0] == FOLDER:
            if on_folder is not None:
                on_folder(str(message[1]), str(message[2]) if len(message) == 3 else None)
            return
        show(message if isinstance(message, str) else "")

    try:
        opened = gateway.remote_exec(OPEN_ON_HOST)
        channel = opened.receive(timeout=OPEN_TIMEOUT_S)
        channel.setcallback(received, endmarker="")
    except Exception as exc:  # execnet raises its own RemoteError/TimeoutError/EOFError types
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1:] or ''}"
    return None


def send(text) -> None:
    """Worker: hand a wait line (or "" to clear it, or a (FOLDER, path) message) to the controller."""
    channel = CHANNEL
    if channel is None or channel.isclosed():
        return
    try:
        channel.send(text)
    except Exception:  # the controller went away: the target's run goes on, the line is only a view
        pass


def on_wait_for(config) -> Callable[[str], None] | None:
    """Where a session's wait line goes: the terminal here; over the channel on a worker of a GPU host;
    nowhere on other xdist workers (they have no terminal)."""
    from pytest_gpuverify.remote.txspec import serving_host
    from pytest_gpuverify.reporting.live import live_line

    if serving_host() and CHANNEL is not None:
        return send
    return None if hasattr(config, "workerinput") else live_line(config)
