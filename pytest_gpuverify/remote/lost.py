"""A GPU host lost mid-run: its sshd, the machine or the link died while its workers ran.

xdist sees each of the host's workers crash and starts a replacement over ssh, which raises execnet's
``HostNotFound`` inside xdist's event loop: an INTERNALERROR that ends the session without its
summary. Here each crashed worker's host is asked once more (one ssh round trip, not over the
session's shared connection, which died with the link): a host that does not answer is lost, no
worker is started there again, and the target that was running is INCONCLUSIVE naming the lost
connection and where its log stays. The other hosts' workers go on."""

from __future__ import annotations

import subprocess

from pytest_gpuverify.remote.preflight import ssh_base
from pytest_gpuverify.remote.sshmux import run_ssh
from pytest_gpuverify.remote.txspec import host_of_spec

# A worker that dies before it is ready (its pytest stopped at its start: an option, an ini file, a plugin
# the host refuses) dies the same way when it is replaced: after this many such deaths on one host the
# session stops with the reason, where xdist would replace workers up to 4 per worker (gw128 ...).
START_TRIES = 2
# what xdist says of a worker whose channel closed before its own error came through (execnet's EOF): the
# death tells nothing of its cause, which another death of the same host's workers may have told
UNTOLD = {"Not properly terminated", "no message"}


class LostHosts:
    def __init__(self, timeout_s: float, ssh_config: str | None) -> None:
        self._ssh = (timeout_s, ssh_config)
        self.lost: dict[str, str] = {}  # host -> what its last ssh said
        self._workers: dict[str, str] = {}  # crashed worker id -> its lost host
        self._start_failures: dict[str, int] = {}  # host -> its workers that died before they were ready
        self.not_started: dict[str, str] = {}  # host -> why its workers cannot start (the session stops)
        self._start_words: dict[str, tuple[str, str]] = {}  # host -> (worker, its words): the last death that told

    def start_failed(self, host: str, worker: str, error: object) -> str | None:
        """``worker`` on ``host`` died before it was ready: the reason to stop the session once the
        host's workers did so ``START_TRIES`` times, else None (it is replaced as xdist does)."""
        self._start_failures[host] = self._start_failures.get(host, 0) + 1
        said = _last_words(error)
        if said not in UNTOLD or host not in self._start_words:
            self._start_words[host] = (worker, said)
        if host in self.not_started or self._start_failures[host] < START_TRIES:
            return None
        # the words of the last death that told its cause: the one that reached the bound may have lost
        # its own (its channel closed first), and the host's workers all die of the same start
        worker, said = self._start_words[host]
        self.not_started[host] = (
            f"host {host}: its workers could not start ({self._start_failures[host]} tried; "
            f"{worker}: {said}); the session stops. Fix: run `pytest --co` there in the "
            "checkout with the same options, and correct what it says"
        )
        return self.not_started[host]

    def after_crash(self, host: str, alias: str | None, worker: str) -> bool:
        """Whether ``host``, whose ``worker`` just crashed, is lost (asked once; a lost host stays lost)."""
        if host in self.lost or not alias:
            return self._noted(host, worker)
        timeout_s, config = self._ssh
        try:
            done = run_ssh([*ssh_base(alias, timeout_s, config), "true"], timeout_s + 5)
        except subprocess.TimeoutExpired:
            self.lost[host] = f"`ssh {alias}` did not answer within {timeout_s:g} s"
        except OSError as exc:
            self.lost[host] = f"`ssh {alias}` could not run ({exc})"
        else:
            if done.returncode == 255:
                said = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no message"])[-1]
                self.lost[host] = f"`ssh {alias}` failed ({said[:160]})"
        return self._noted(host, worker)

    def _noted(self, host: str, worker: str) -> bool:
        if host in self.lost:
            self._workers[worker] = host
        return host in self.lost

    def no_restarts_there(self, dsession) -> None:
        """xdist replaces a crashed worker with a clone of its spec (``DSession._clone_node``, its one
        way to restart): a clone on a lost host is not made. xdist then drops the crashed worker as
        it would after a clone, and the scheduler (remote/scheduler.py) gives the host's share to the
        controller, which ends it INCONCLUSIVE."""
        clone = getattr(dsession, "_clone_node", None)
        if clone is None:
            return

        def clone_unless_lost(node):
            if host_of_spec(node.gateway.spec) in self.lost or self.not_started:
                return None
            return clone(node)

        dsession._clone_node = clone_unless_lost
        report_line = getattr(dsession, "report_line", None)
        if report_line is None:
            return

        def say_not_replaced(line: str) -> None:  # xdist says it replaces the worker before it asks for the clone
            words = line.split()
            replacing = line.strip().startswith("replacing crashed worker")
            host = self._workers.get(words[-1]) if replacing else None
            if replacing and host is None and self.not_started:
                report_line(f"\nworker {words[-1]} is not replaced: {next(iter(self.not_started.values()))}")
                return
            report_line(
                line
                if host is None
                else f"\nworker {words[-1]} is not replaced: the connection to host {host} was lost"
            )

        dsession.report_line = say_not_replaced

    @staticmethod
    def running_reason(host: str, folder: str | None, topic: str) -> str:
        where = f"{folder}/bench_{topic}.*.log" if folder else f"its result folder (bench_{topic}.*.log)"
        return f"the connection to host {host} was lost while it ran; its log stays on {host} at {where}"

    def unran_reason(self, host: str) -> str:
        return f"the connection to host {host} was lost ({self.lost[host]}) before this target ran"


def _last_words(error: object) -> str:
    """What a dead worker's error says, in one line: execnet hands over the worker's traceback, whose
    exception lines (after its last frame) say it; pytest's usage text among them is left out."""
    import re

    lines = str(error or "").splitlines()
    frames = [i for i, ln in enumerate(lines) if ln.startswith("  File ")]
    tail = lines[frames[-1] + 1 :] if frames else lines
    words = [
        re.sub(r"^[\w.]*(Error|Exception|Exit)\w*: ", "", ln.strip())
        for ln in tail
        if ln.strip() and not ln.startswith("    ")
    ]  # a frame's code and carets are indented
    words = [w for w in words if not w.startswith("usage:")]
    return ("; ".join(words) or "no message")[:300]
