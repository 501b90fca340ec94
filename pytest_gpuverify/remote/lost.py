"""A GPU host lost mid-run: its sshd, the machine or the link died while its workers ran.

xdist sees each of the host's workers crash and starts a replacement over ssh, which raises execnet's
``HostNotFound`` inside xdist's event loop: an INTERNALERROR that ends the session without its
summary. Here each crashed worker's host is asked once more (one ssh round trip, not over the
session's shared connection, which died with the link): a host that does not answer is lost, no
worker is started there again, and the target that was running is INCONCLUSIVE naming the lost
connection and where its log stays. The other hosts' workers go on."""

from __future__ import annotations

import subprocess
from typing import Optional

from pytest_gpuverify.remote.preflight import ssh_base
from pytest_gpuverify.remote.sshmux import run_ssh
from pytest_gpuverify.remote.txspec import host_of_spec


class LostHosts:
    def __init__(self, timeout_s: float, ssh_config: Optional[str]) -> None:
        self._ssh = (timeout_s, ssh_config)
        self.lost: dict[str, str] = {}  # host -> what its last ssh said
        self._workers: dict[str, str] = {}  # crashed worker id -> its lost host

    def after_crash(self, host: str, alias: Optional[str], worker: str) -> bool:
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
            if host_of_spec(node.gateway.spec) in self.lost:
                return None
            return clone(node)

        dsession._clone_node = clone_unless_lost
        report_line = getattr(dsession, "report_line", None)
        if report_line is None:
            return

        def say_not_replaced(line: str) -> None:  # xdist says it replaces the worker before it asks for the clone
            words = line.split()
            host = self._workers.get(words[-1]) if line.strip().startswith("replacing crashed worker") else None
            report_line(line if host is None else f"\nworker {words[-1]} is not replaced: the connection to host "
                        f"{host} was lost")

        dsession.report_line = say_not_replaced

    @staticmethod
    def running_reason(host: str, folder: Optional[str], topic: str) -> str:
        where = f"{folder}/bench_{topic}.*.log" if folder else f"its result folder (bench_{topic}.*.log)"
        return f"the connection to host {host} was lost while it ran; its log stays on {host} at {where}"

    def unran_reason(self, host: str) -> str:
        return f"the connection to host {host} was lost ({self.lost[host]}) before this target ran"
