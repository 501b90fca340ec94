"""The xdist controller of a session on GPU hosts over SSH: it checks the hosts, starts one worker
per GPU slot through execnet SSH gateways, and watches them.

It runs no target itself. What it adds to xdist: hosts that do not answer are left out and named;
a worker that dies mid-target makes that target INCONCLUSIVE naming its host (xdist only says
"crashed"); and a deadline of its own, because xdist has no heartbeat (a worker whose process hangs
while ssh stays up is waited for forever): past it the worker's ssh is cut, which xdist takes as a
crash."""

from __future__ import annotations

import threading
import time
from typing import Optional

import pytest

from ..envfile import EnvFile
from ..options import SetupError
from .preflight import SSH_CONFIG_VARIABLE, check_hosts, ssh_timeout_s
from .txspec import checkouts_root, host_of_spec, remote_rows, tx_specs

DEADLINE_MARGIN_S = 120.0  # beyond a target's own limits (wait, window, timeout): start-up, checks, artifact
MARGIN_VARIABLE = "GPUVERIFY_REMOTE_MARGIN_S"


def plan_remote(config: pytest.Config, env: EnvFile, environ) -> Optional["RemoteController"]:
    """Called before pytest configures xdist. None: the session runs here, as before."""
    rows = remote_rows(env, config.getoption("gpu_host"), config.getoption("gpu_arch"),
                       config.getoption("gpu_hosts"))
    if rows is None:
        return None
    if not config.pluginmanager.has_plugin("xdist"):
        raise SetupError(f"host {rows[0].host} is reached over SSH ({rows[0].ssh_alias}): that needs pytest-xdist, "
                         "which is not loaded. Fix: pip install pytest-xdist, and do not pass -p no:xdist")
    timeout_s, ssh_config = ssh_timeout_s(environ), environ.get(SSH_CONFIG_VARIABLE) or None
    checks = check_hosts(rows, env.path, timeout_s, ssh_config)
    problems = [c.problem for c in checks if c.problem]
    if problems:
        raise SetupError(problems[0])
    down = [c.unreachable for c in checks if c.unreachable]
    up = [c.row for c in checks if not c.unreachable]
    if not up:
        raise SetupError(f"{'; '.join(down)}. Fix: check the host is up and `ssh <alias> hostname` answers")
    synced = _paths_and_sync(config, env, up, timeout_s, ssh_config)
    per_host = config.option.numprocesses if isinstance(config.option.numprocesses, int) else None
    config.option.numprocesses = None  # xdist would turn -n into local workers: -n is per host here
    config.option.tx = tx_specs(up, per_host, ssh_config, timeout_s, checkouts_root(env))
    if config.option.dist == "no":
        config.option.dist = "load"
    from pathlib import Path

    from ..files import FileProblem, result_folder
    from .collect import ArtifactCollector

    ticket, tickets = config.getoption("ticket"), env.resources.tickets
    if ticket and tickets is None:
        raise SetupError(f"--ticket {ticket} is given, but `tickets` is not set in section 'Resources' of {env.path}. "
                         "Fix: set | tickets | /path/to/tickets |, or drop --ticket to write to ./")
    try:
        out_dir, _ = result_folder(tickets, ticket, Path(config.invocation_params.dir))
    except FileProblem as exc:
        raise SetupError(f"artifacts: {exc}") from None
    return RemoteController(down, _target_limit_s(config, environ), timeout_s, ssh_config, synced,
                            ArtifactCollector(out_dir))


def _paths_and_sync(config: pytest.Config, env: EnvFile, rows, timeout_s: float, ssh_config: Optional[str]):
    """--gpu-sync copies the local checkout to the hosts (its record, else None). Path arguments in a
    local checkout of a Repos row are passed as ``<repo>:<path>``, found in the host's checkout."""
    import dataclasses
    from pathlib import Path

    from .sync import local_checkout, repo_qualified, sync_checkout

    here = Path(config.invocation_params.dir)
    synced = sync_checkout(here, env, rows, timeout_s, ssh_config) if config.getoption("gpu_sync") else None
    try:
        top, row = local_checkout(here, env)
    except SetupError:
        return synced
    args = repo_qualified(list(config.invocation_params.args), config.option.file_or_dir, here, top, row.repo)
    config.invocation_params = dataclasses.replace(config.invocation_params, args=tuple(args))  # what xdist sends
    return synced


def _target_limit_s(config: pytest.Config, environ) -> float:
    def seconds(name: str, default: float) -> float:
        value = config.getoption(name) or config.getini(name.replace("-", "_"))
        try:
            return float(value)
        except (TypeError, ValueError):
            return default

    try:
        margin = float(environ.get(MARGIN_VARIABLE, DEADLINE_MARGIN_S))
    except ValueError:
        margin = DEADLINE_MARGIN_S
    return seconds("gpu_timeout", 3600) + seconds("gpu_wait", 0) + seconds("gpu_window", 2) + margin


class RemoteController:
    """A pytest plugin on the controller only."""

    def __init__(self, unreachable: list[str], limit_s: float, ssh_timeout_s: float = 10.0,
                 ssh_config: Optional[str] = None, synced=None, collector=None) -> None:
        self.unreachable = unreachable
        self.collector = collector
        self._landed: tuple[int, list[str]] = (0, [])
        self.synced = synced
        self.limit_s = limit_s
        self._ssh = (ssh_timeout_s, ssh_config)
        self._crashed: dict[str, str] = {}  # worker id -> host
        self._cut: dict[str, str] = {}  # worker id -> why the deadline cut it
        self._stop = threading.Event()
        self._dsession = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        if self.synced is not None:
            node.workerinput["gpuverify_synced"] = self.synced.model_dump()

    # -- who ran where ---------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        if self.collector is not None:
            self.collector.receive(host_of_spec(node.gateway.spec) or "host", node.gateway.id,
                                   getattr(node, "workeroutput", None) or {})
        if error is not None:
            self._crashed[node.gateway.id] = host_of_spec(node.gateway.spec) or "?"

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report, sched) -> None:
        node = getattr(report, "node", None)
        wid = node.gateway.id if node is not None else "?"
        host = (host_of_spec(node.gateway.spec) if node is not None else None) or self._crashed.get(wid, "?")
        why = self._cut.get(wid) or f"its worker {wid} on host {host} died mid-run (ssh or the worker's process ended)"
        reason = f"{why}; the host's guard stopped the command and its GPU lock went with the worker"
        report.user_properties = [*getattr(report, "user_properties", []), ("gpuverify_verdict", "INCONCLUSIVE"),
                                  ("gpuverify_host", host), ("gpuverify_gpus", "-"), ("gpuverify_artifact", "-"),
                                  ("gpuverify_reason", reason)]
        report.longrepr = f"INCONCLUSIVE: {crashitem}\n  - {reason}"
        report.when = "call"  # a target's verdict: the summary and the report status read it there

    # -- the deadline ------------------------------------------------------------------------------
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._dsession = session.config.pluginmanager.get_plugin("dsession")
        threading.Thread(target=self._watch, name="gpuverify-remote-deadline", daemon=True).start()

    def _watch(self) -> None:
        started: dict[tuple[str, object], float] = {}
        while not self._stop.wait(0.5):
            sched = getattr(self._dsession, "sched", None)
            for node, pending in list((getattr(sched, "node2pending", None) or {}).items()):
                if not pending:
                    continue
                key = (node.gateway.id, pending[0])
                first = started.setdefault(key, time.monotonic())
                if time.monotonic() - first > self.limit_s and node.gateway.id not in self._cut:
                    self._cut[node.gateway.id] = (f"its worker {node.gateway.id} on host {host_of_spec(node.gateway.spec)} "
                                                  f"gave no result within {self.limit_s:g} s (the plugin's deadline)")
                    self._cut_worker(node.gateway)

    # -- the report ----------------------------------------------------------------------------------
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.collector is not None:
            taken, problems = self._landed
            if taken:
                terminalreporter.write_line(f"gpuverify: {taken} artifacts of the hosts copied to {self.collector.out_dir}")
            for line in problems:
                terminalreporter.write_line(f"gpuverify: {line}", red=True)
        for line in self.unreachable:
            terminalreporter.write_line(f"gpuverify: {line}; it ran nothing. Fix: check the host is up and "
                                        "`ssh <alias> hostname` answers", red=True)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        self._stop.set()
        if self.collector is not None:  # every worker is down by now: take their files
            self._landed = self.collector.land()
        if (self.unreachable or self._landed[1]) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        yield

    def _cut_worker(self, gateway) -> None:
        """Kill the hung worker on its host (its pid from the gateway's start), so that its guard stops
        the command and the kernel drops its lock; then end its ssh, which xdist reports as a crash."""
        import subprocess

        from .preflight import ssh_base

        pid = getattr(getattr(gateway, "_cache_rinfo", None), "pid", None)
        alias = (getattr(gateway.spec, "ssh", None) or "").split()[-1:]
        if pid and alias:
            timeout_s, config = self._ssh
            try:
                subprocess.run([*ssh_base(alias[0], timeout_s, config), f"kill -KILL {int(pid)}"], timeout=timeout_s + 5,
                               stdin=subprocess.DEVNULL, capture_output=True)
            except subprocess.TimeoutExpired:
                pass  # the host is gone too: its own guard and kernel end what ran there
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if popen is not None:
            popen.kill()
