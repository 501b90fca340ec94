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
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.config.errors import UsageError, usage_error_of_line
from pytest_gpuverify.remote.preflight import SSH_CONFIG_VARIABLE, check_hosts, ssh_timeout_s
from pytest_gpuverify.remote.sshmux import SharedSsh, shared_ssh
from pytest_gpuverify.remote.txspec import checkouts_root, host_of_spec, remote_rows, tx_specs
from pytest_gpuverify.remote.unran import unran_report, verdict_properties, write_unran

if TYPE_CHECKING:
    from pytest_gpuverify.config.options import RunOptions

DEADLINE_MARGIN_S = 120.0  # beyond a target's own limits (wait, window, timeout): start-up, checks, artifact
MARGIN_VARIABLE = "GPUVERIFY_REMOTE_MARGIN_S"


def plan_remote(
    config: pytest.Config, env: EnvFile, environ, options_of: Callable[[pytest.Config], RunOptions]
) -> RemoteController | None:
    """Called before pytest configures xdist. None: the session runs here, as before. ``options_of``:
    the plugin's one parse of its options (plugin_options.build_options)."""
    rows = remote_rows(env, config.getoption("gpu_host"), config.getoption("gpu_arch"), config.getoption("gpu_hosts"))
    if rows is None:
        return None
    if not config.pluginmanager.has_plugin("xdist"):
        raise UsageError(
            "pytest-xdist",
            f"host {rows[0].host} is reached over SSH ({rows[0].ssh_alias}): that needs "
            "pytest-xdist, which is not loaded",
            "pip install pytest-xdist, and do not pass -p no:xdist",
        )
    limit_s = _target_limit_s(options_of(config), environ)  # a bad --gpu-timeout stops the run before any host is asked
    timeout_s, ssh_config = ssh_timeout_s(environ), environ.get(SSH_CONFIG_VARIABLE) or None
    shared = shared_ssh(environ)
    if shared is not None:  # pytest's last cleanup, after every unconfigure (ours waits for the workers' exit)
        aliases = [r.ssh_alias or r.host for r in rows]
        config.add_cleanup(lambda: shared.close(aliases, ssh_config))
    remote = _plan_on(config, env, rows, limit_s, timeout_s, ssh_config, shared)
    remote.shared_ssh = shared
    return remote


def _plan_on(
    config: pytest.Config, env: EnvFile, rows, limit_s: float, timeout_s: float, ssh_config: str | None, shared
) -> RemoteController:
    checks = check_hosts(rows, env.path, timeout_s, ssh_config, shared)
    wrong = [c for c in checks if c.problem]
    if wrong:
        raise usage_error_of_line(wrong[0].row.host, wrong[0].problem or "")
    down = [c.unreachable for c in checks if c.unreachable]
    up = [c.row for c in checks if not c.unreachable]
    if not up:
        raise UsageError(
            rows[0].host, "; ".join(down), "check the host is up and `ssh <alias> hostname` answers", named=True
        )
    facts = {c.row.host: c.facts for c in checks if not c.unreachable}
    synced = _paths_and_sync(config, env, up, facts, timeout_s, ssh_config, shared)
    per_host = config.option.numprocesses if isinstance(config.option.numprocesses, int) else None
    config.option.numprocesses = None  # xdist would turn -n into local workers: -n is per host here
    config.option.tx = tx_specs(up, per_host, ssh_config, timeout_s, rootdirs_of(facts, env), shared)
    if config.option.dist == "no":
        config.option.dist = "load"

    from pytest_gpuverify.engine.setup_checks import artifact_folder
    from pytest_gpuverify.remote.collect import ArtifactCollector

    ticket = config.getoption("ticket")
    out_dir, lock = artifact_folder(env, ticket, Path(config.invocation_params.dir))
    from pytest_gpuverify.remote.placement import HostSlots

    remote = RemoteController(down, limit_s, timeout_s, ssh_config, synced, ArtifactCollector(out_dir))
    remote.hosts = [
        HostSlots(c.row.host, c.row.gpus or 1) for c in checks
    ]  # every host asked for: targets are tied up front
    remote.down = {c.row.host: c.unreachable for c in checks if c.unreachable}
    remote.key, remote.lock = ticket, lock
    if config.getoption("gpu_topic"):
        from pytest_gpuverify.config.targets import safe_topic

        remote.topic = safe_topic(config.getoption("gpu_topic"))
    return remote


def _paths_and_sync(
    config: pytest.Config, env: EnvFile, rows, facts: dict, timeout_s: float, ssh_config: str | None, shared
):
    """--gpu-sync copies the local checkout to the hosts (host -> its record, else None); the command
    line the workers get (remote/workerargs.py)."""
    import dataclasses
    from pathlib import Path

    from pytest_gpuverify.remote.sync import local_checkout, sync_checkout
    from pytest_gpuverify.remote.workerargs import args_for_hosts

    here = Path(config.invocation_params.dir)
    synced = None
    if config.getoption("gpu_sync"):
        row = local_checkout(here, env)[1]
        paths = {host: said.repo_path(row.repo) for host, said in facts.items() if said is not None}
        synced = sync_checkout(
            here,
            env,
            rows,
            paths,
            timeout_s,
            ssh_config,
            shared,
            overwrite=config.getoption("gpu_sync_overwrite"),
            asked=list(config.option.file_or_dir or []),
        )
    args = args_for_hosts(list(config.invocation_params.args), list(config.option.file_or_dir or []), here, env)
    config.invocation_params = dataclasses.replace(config.invocation_params, args=tuple(args))  # what xdist sends
    return synced


def rootdirs_of(facts: dict, env: EnvFile) -> dict[str, str | None]:
    """Each host's rootdir from its own paths; a host that did not say them gets the controller's."""
    return {
        host: (said.checkouts_root() if said is not None and said.repos else None) or checkouts_root(env)
        for host, said in facts.items()
    }


def _target_limit_s(options: RunOptions, environ) -> float:
    """A target's longest time on its host: its own limits as the engine reads them (a bad value is the
    same usage error here as in a local run) and the margin."""
    from pytest_gpuverify.config.options import check_seconds

    margin = check_seconds(MARGIN_VARIABLE, environ.get(MARGIN_VARIABLE, DEADLINE_MARGIN_S))
    return options.timeout_s + options.wait_s + options.window_s + margin


class RemoteController:
    """A pytest plugin on the controller only."""

    def __init__(
        self,
        unreachable: list[str],
        limit_s: float,
        ssh_timeout_s: float = 10.0,
        ssh_config: str | None = None,
        synced=None,
        collector=None,
    ) -> None:
        self.unreachable = unreachable
        self.collector = collector
        self._landed: tuple[int, list[str]] = (0, [])
        self.synced = synced
        self.limit_s = limit_s
        self._ssh = (ssh_timeout_s, ssh_config)
        self._crashed: dict[str, str] = {}  # worker id -> host
        self._ready: set[str] = set()  # worker ids that started (xdist's workerready)
        self._cut: dict[str, str] = {}  # worker id -> why the deadline cut it
        self._stop = threading.Event()
        self._dsession = None
        self._sched = None  # the HostScheduler, once xdist made it (after the first workers' gateways)
        self.hosts: list = []  # placement.HostSlots of every host asked for, up or not
        self.down: dict[str, str] = {}  # host -> why it did not answer
        self.key: str | None = None  # the ticket, for the artifacts of targets that never ran
        self.lock: Path | None = None  # the result folder's lock, taken to write them
        self.topic: str | None = None  # --gpu-topic: the one target's artifact name
        self._reported: set[str] = set()  # node ids with a verdict
        self._unran_problems: list[str] = []
        self._wait_line_problems: list[str] = []
        self._config: pytest.Config | None = None
        self._folders: dict[str, tuple[str, str | None]] = {}  # worker id -> (its result folder on its host,
        # the host's stamp before its first target): remote/deadlog.py
        self._exited: list = []  # the gateways of workers that ended cleanly, told to exit at once
        self.shared_ssh: SharedSsh | None = (
            None  # remote/sshmux.py: the hosts' connections of the session, ended at its end
        )
        from pytest_gpuverify.remote.lost import LostHosts

        self.lost = LostHosts(ssh_timeout_s, ssh_config)  # hosts that stopped answering mid-run (remote/lost.py)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        from pytest_gpuverify.remote.scheduler import HostScheduler

        self._sched = HostScheduler(config, self.hosts, log)
        return self._sched

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        if self.collector is not None:  # a worker began a target: from here on this process waits
            self.collector.warm()

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or not report.passed:  # a setup failure or skip is its verdict too
            self._reported.add(report.nodeid)

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config, specs) -> None:
        from pytest_gpuverify.remote.gateways import start_at_once

        nodemanager = getattr(config.pluginmanager.get_plugin("dsession"), "nodemanager", None)
        if nodemanager is not None:
            start_at_once(nodemanager, list(specs))

    def pytest_unconfigure(self, config) -> None:
        """The workers told to exit at their end have been ending while the summary was written; xdist's
        teardown skips a gateway already told to exit, so they are waited for here as execnet's
        ``Group.terminate`` does (their ssh killed past xdist's timeout), before the ssh masters close."""
        from execnet.multi import safe_terminate
        from xdist.workermanage import NodeManager  # type: ignore[import-untyped]

        def join_wait(gateway) -> None:
            gateway.join()
            gateway._io.wait()

        def kill(gateway) -> None:
            gateway._io.kill()

        if self._exited:
            safe_terminate(
                self._exited[0].execmodel,
                NodeManager.EXIT_TIMEOUT,
                [(partial(join_wait, g), partial(kill, g)) for g in self._exited],
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_newgateway(self, gateway) -> None:
        """Before xdist starts the worker there: the channel of its live wait line (remote/waitline.py)."""
        from pytest_gpuverify.remote.waitline import open_on_gateway
        from pytest_gpuverify.reporting.live import live_line

        if self._sched is not None:  # a crashed worker's replacement: its host's targets wait for it
            self._sched.worker_starting(host_of_spec(gateway.spec) or "?", gateway.id)
        worker: str = gateway.id

        def on_folder(folder: str, since: str | None) -> None:
            self._folders[worker] = (folder, since)

        problem = open_on_gateway(gateway, live_line(self._config), on_folder)
        if problem:
            self._wait_line_problems.append(
                f"host {host_of_spec(gateway.spec)}: its wait line is not shown here ({problem})"
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        record = (self.synced or {}).get(host_of_spec(node.gateway.spec) or "")
        if record is not None:
            node.workerinput["gpuverify_synced"] = record.model_dump()

    # -- who ran where ---------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node) -> None:
        self._ready.add(node.gateway.id)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        if error is None:  # its session is over and its files are here: it may exit now (execnet lets it
            node.gateway.exit()  # finish pytest's own end first), not with the others at xdist's teardown
            self._exited.append(node.gateway)  # waited for at the end, before the ssh connections close
        if self.collector is not None:
            self.collector.receive(
                host_of_spec(node.gateway.spec) or "host", node.gateway.id, getattr(node, "workeroutput", None) or {}
            )
        if error is not None:
            host = self._crashed[node.gateway.id] = host_of_spec(node.gateway.spec) or "?"
            if node.gateway.id not in self._cut:
                lost = self.lost.after_crash(host, _alias_of(node.gateway.spec), node.gateway.id)
                if not lost and node.gateway.id not in self._ready:
                    self._stop_if_cannot_start(host, node.gateway.id, error)
        if self._sched is not None:
            self._sched.worker_down(node)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report, sched) -> None:
        node = getattr(report, "node", None)
        wid = node.gateway.id if node is not None else "?"
        host = (host_of_spec(node.gateway.spec) if node is not None else None) or self._crashed.get(wid, "?")
        if host in self.lost.lost and wid not in self._cut:
            from pytest_gpuverify.remote.placement import topic_of

            reason = self.lost.running_reason(
                host, self._folders.get(wid, (None, None))[0], self.topic or topic_of(crashitem)
            )
        else:
            why = (
                self._cut.get(wid)
                or f"its worker {wid} on host {host} died mid-run (ssh or the worker's process ended)"
            )
            reason = (
                f"{why}; the host's guard stopped the command and its GPU lock went with the worker; "
                f"{self._raw_log(node, wid, host, crashitem)}"
            )
        path = self._write_unran(crashitem, host, reason)
        report.user_properties = [*getattr(report, "user_properties", []), *verdict_properties(host, reason, path)]
        report.longrepr = f"INCONCLUSIVE: {crashitem}\n  - {reason}"
        report.when = "call"  # a target's verdict: the summary and the report status read it there

    def _stop_if_cannot_start(self, host: str, worker: str, error) -> None:
        """A worker that died before it was ready: past the bound, xdist's loop stops the session
        with the reason (its ``shouldstop``, read after this hook) and no worker is started again."""
        reason = self.lost.start_failed(host, worker, error)
        if reason and self._dsession is not None and not self._dsession.shouldstop:
            self._dsession.shouldstop = reason

    # -- the deadline ------------------------------------------------------------------------------
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._dsession = session.config.pluginmanager.get_plugin("dsession")
        if self._dsession is not None:
            self.lost.no_restarts_there(self._dsession)
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
                    self._cut[node.gateway.id] = (
                        f"its worker {node.gateway.id} on host {host_of_spec(node.gateway.spec)} "
                        f"gave no result within {self.limit_s:g} s (the plugin's deadline)"
                    )
                    self._cut_worker(node.gateway)

    # -- the report ----------------------------------------------------------------------------------
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.collector is not None:
            taken, problems = self._landed
            if taken:
                terminalreporter.write_line(
                    f"gpuverify: {taken} artifacts of the hosts copied to {self.collector.out_dir}"
                )
            for line in problems + self._unran_problems + self._wait_line_problems:
                terminalreporter.write_line(f"gpuverify: {line}", red=True)
        for line in self.unreachable:
            terminalreporter.write_line(
                f"gpuverify: {line}; it ran nothing. Fix: check the host is up and `ssh <alias> hostname` answers",
                red=True,
            )
        if self.synced:
            from pytest_gpuverify.remote.sync import sync_lines

            for line in sync_lines(self.synced):
                terminalreporter.write_line(f"gpuverify: {line}")
        for host, said in self.lost.lost.items():
            terminalreporter.write_line(
                f"gpuverify: the connection to host {host} was lost mid-run ({said}); no worker "
                f"was started there again. Fix: check the host is up, then run its targets "
                f"again (`gpuverify merge` takes what it wrote from there)",
                red=True,
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        self._stop.set()
        if self.collector is not None:  # every worker is down by now: their files were taken as each ended
            self._landed = self.collector.landed()
        unran = self._end_unran(session.config)
        if (self.unreachable or self._landed[1] or unran) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        yield

    def _end_unran(self, config) -> int:
        """Each target tied to a host that gave no verdict for it (the host never answered, its
        workers all ended, the session stopped first, or no host has its GPUs): INCONCLUSIVE naming the
        host, with an artifact. How many."""
        sched = getattr(self._dsession, "sched", None)
        placement = getattr(sched, "placement", None)
        if sched is None or placement is None or sched.collection is None:
            return 0
        count = 0
        for index, nodeid in enumerate(sched.collection):
            if nodeid in self._reported:
                continue
            host = placement.host_of(index) or "-"
            if index in placement.unplaced:
                reason = placement.unplaced[index]
            elif host in self.down:
                reason = f"{self.down[host]}; its targets are tied to it and ran nowhere else"
            elif host in self.lost.lost:
                reason = self.lost.unran_reason(host)
            elif self.lost.not_started:
                reason = next(iter(self.lost.not_started.values()))
            elif host in sched.lost:
                reason = f"host {host}: its workers all ended (crashed, or cut at the plugin's deadline) before this target ran"
            else:
                reason = f"host {host}: the session stopped before this target ran"
            path = self._write_unran(nodeid, host, reason)
            config.hook.pytest_runtest_logreport(report=unran_report(nodeid, host, reason, path))
            count += 1
        return count

    def _write_unran(self, nodeid: str, host: str, reason: str):
        if self.collector is None:
            return None
        path, problem = write_unran(self.collector.out_dir, self.lock, nodeid, host, reason, self.key, self.topic)
        if problem:
            self._unran_problems.append(problem)
        return path

    def _raw_log(self, node, wid: str, host: str, nodeid: str) -> str:
        """Where the dead worker's raw log of ``nodeid`` is now: copied here if it can be."""
        from pytest_gpuverify.remote.deadlog import fetch_raw_log
        from pytest_gpuverify.remote.placement import topic_of
        from pytest_gpuverify.remote.preflight import ssh_base

        alias = _alias_of(node.gateway.spec) if node is not None else None
        if not alias or self.collector is None:
            return f"its raw log, if the command started, stays on host {host}"
        timeout_s, config = self._ssh
        folder, since = self._folders.get(wid, (None, None))
        return fetch_raw_log(
            ssh_base(alias, timeout_s, config, self.shared_ssh),
            host,
            folder,
            self.topic or topic_of(nodeid),
            self.collector.out_dir,
            timeout_s,
            since,
        )

    def _cut_worker(self, gateway) -> None:
        """Kill the hung worker on its host (its pid from the gateway's start), so that its guard stops
        the command and the kernel drops its lock; then end its ssh, which xdist reports as a crash."""
        import subprocess

        from pytest_gpuverify.remote.preflight import ssh_base
        from pytest_gpuverify.remote.sshmux import run_ssh

        pid = getattr(getattr(gateway, "_cache_rinfo", None), "pid", None)
        alias = _alias_of(gateway.spec)
        if pid and alias:
            timeout_s, config = self._ssh
            try:
                run_ssh([*ssh_base(alias, timeout_s, config, self.shared_ssh), f"kill -KILL {int(pid)}"], timeout_s + 5)
            except (OSError, subprocess.TimeoutExpired):
                pass  # the host is gone too: its own guard and kernel end what ran there
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if popen is not None:
            popen.kill()


def _alias_of(spec) -> str | None:
    """The ssh alias an xdist ``ssh=`` spec names (its last word), or None."""
    words = (getattr(spec, "ssh", None) or "").split()
    return words[-1] if words else None
