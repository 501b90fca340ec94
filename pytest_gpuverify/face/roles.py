"""Which process of a ``--gpu-verify`` run does what: one role, chosen once in pytest_configure
(plugin.py), as pytest-cov has Central / DistMaster / DistWorker. Each role is a pytest plugin object,
registered as ``gpuverify-role`` from pytest_configure to pytest_unconfigure.

- :class:`Central`: a session without xdist. It builds the engine and runs every target itself.
- :class:`DistWorker`: an xdist worker, here or on a GPU host over SSH: the same, for the targets
  xdist sends it.
- :class:`DistController`: the controller of xdist workers on this host. It runs no target and
  builds no engine: it checks the setup once (engine/setup_checks.py) and the topics, hands its
  workers the folder where they claim artifact names, and prints the summary.
- :class:`RemoteDistController`: the controller of workers on GPU hosts over SSH; the work of
  remote/controller.py, planned in pytest_cmdline_main, plus the summary and the topic check."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.common.profile import PROFILE, profile_lines
from pytest_gpuverify.config.envfile import EnvFile, load_env_file
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.config.topics import TopicClaims
from pytest_gpuverify.face.collectors import (
    CollectsTargets,
    GpuTargetItem,
    kind_of,
    load_declarations_of,
    no_outside_timeout,
    one_target_per_topic,
)
from pytest_gpuverify.face.options import build_options, option_value
from pytest_gpuverify.face.role_base import Role, terminate_like_ctrl_c
from pytest_gpuverify.face.shard_items import SHARD_KEY, ShardSetting
from pytest_gpuverify.face.stash_keys import (
    CLAIMS_VARIABLE,
    DECLARED_KEY,
    ENGINE_KEY,
    ENV_KEY,
    NO_CONFTEST_KEY,
    REMOTE_KEY,
    STORED_KEY,
    WRITE_PROBLEMS_KEY,
)
from pytest_gpuverify.face.terminal import VerdictSummary, verdict_properties
from pytest_gpuverify.place.resolve import runs_on_host
from pytest_gpuverify.remote.onhost import hand_back, name_a_lost_controller, synced_record, tell_controller

# The engine is imported in _build_engine, in the phases --gpu-profile times, alongside the GPU's start
# in its threads; an xdist controller imports only its setup checks.
if TYPE_CHECKING:
    from pytest_gpuverify.engine.session import VerifySession
    from pytest_gpuverify.remote.controller import RemoteController


def choose_role(config: pytest.Config, loaded_at: float | None = None) -> Role:
    """The role of this process; a bad setup (options, env file, declarations) is a UsageError."""
    if loaded_at is not None:
        PROFILE.mark("plugin loaded", loaded_at)
    if REMOTE_KEY in config.stash:
        _quiet_docker_import()
        return RemoteDistController(config, config.stash[REMOTE_KEY])
    try:
        with PROFILE.phase("options read"):
            options = build_options(config)
        if not runs_on_host(options.container):  # on the host (--gpu-container none) no Docker client is made
            _quiet_docker_import()
        read_early = config.stash.get(ENV_KEY, None)
        if read_early and read_early[0] == options.env_path:
            env = read_early[1]
        else:
            with PROFILE.phase("env file"):
                env = load_env_file(options.env_path)
        with PROFILE.phase("declarations"):
            config.stash[DECLARED_KEY] = load_declarations_of(config, env)
        if config.getoption("gpu_slurm"):
            from pytest_gpuverify.face.slurm_role import SlurmController  # the Slurm launcher: --gpu-slurm only

            return SlurmController(config, options, env, distributing=_distributing(config))
        if config.getoption("gpu_slurm_shards"):
            raise UsageError(
                "--gpu-slurm-shards",
                "--gpu-slurm-shards splits the jobs --gpu-slurm submits",
                "add --gpu-slurm, or drop --gpu-slurm-shards",
            )
        if config.getoption("gpu_shard"):
            config.stash[SHARD_KEY] = ShardSetting(config)
        elif config.getoption("gpu_shard_run") or config.getoption("gpu_durations"):
            raise UsageError(
                "--gpu-shard",
                "--gpu-shard-run and --gpu-durations split a run into shards",
                "pass --gpu-shard I/N (or auto) with them",
            )
        if hasattr(config, "workerinput"):
            return DistWorker(config, _engine_of(config, options, env))
        if _distributing(config):
            from pytest_gpuverify.engine.setup_checks import check_setup  # the controller's only engine import

            check_setup(options, env)  # stops the run here, once, before any worker starts
            return DistController(config)
        return Central(config, _engine_of(config, options, env))
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def _quiet_docker_import() -> None:
    from pytest_gpuverify.execute.container import quiet_docker_import  # the Docker SDK: its import is timed

    with PROFILE.phase("requests imported (Docker SDK)"):
        quiet_docker_import()  # here, in the main thread, before the session's threads import docker


def _distributing(config: pytest.Config) -> bool:
    """Whether xdist starts workers from this process: as xdist decides it, a --dist other than "no"
    and some --tx (-n sets both), never under --collect-only."""
    return (
        not config.getvalue("collectonly")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
    )


def _engine_of(config: pytest.Config, options: RunOptions, env: EnvFile) -> VerifySession:
    """The engine a process that embeds pytest put in the stash before the roles were chosen (its
    pytest_configure; the face's in-process tests give one that runs no GPU), else one built here."""
    given = config.stash.get(ENGINE_KEY, None)
    return given if given is not None else _build_engine(config, options, env)


def _build_engine(config: pytest.Config, options: RunOptions, env: EnvFile) -> VerifySession:
    with PROFILE.phase("engine's start imported"):
        from pytest_gpuverify.engine.start import SessionStart
        from pytest_gpuverify.remote.waitline import on_wait_for

    with PROFILE.phase("engine's start built"):
        # a setup problem raises here
        start = SessionStart(options, env, on_wait=on_wait_for(config), health=_health_reader(config))
        start.begin()  # the GPU library's start, the first readings and the arch, while the rest is imported

    with PROFILE.phase("engine imported"):
        from pytest_gpuverify.engine.session import VerifySession, echo_to_stdout
        from pytest_gpuverify.reporting.live import RunningLine, live_line, running_line_wanted

    with PROFILE.phase("engine built"):
        engine = VerifySession(
            start,
            echo=echo_to_stdout if options.echo_output else None,
            topics=TopicClaims(getattr(config, "workerinput", {}).get(CLAIMS_VARIABLE)),
            live_line=(
                partial(RunningLine, live_line(config)) if running_line_wanted(config, options.echo_output) else None
            ),
        )
    # What is alive now (pytest's, the plugin's and the engine's modules, classes and schemas) lives to
    # the process's end: out of the cyclic collector's walks from here on. pytest collects five times at
    # its end (its unraisable-exception check), and each walk over these took about as long as pytest's
    # whole start-up; the objects the session and its tests make later are still walked and collected.
    gc.freeze()
    return engine


def _health_reader(config: pytest.Config):
    """The GPU health the picker skips by, read once from the history store (``$GPUVERIFY_HEALTH_STORE``, else
    --gpu-history); None when the session names no store."""
    store = os.environ.get("GPUVERIFY_HEALTH_STORE") or option_value(config, "gpu_history")  # health.HEALTH_STORE_ENV
    if not store:
        return None
    spec = option_value(config, "gpu_health")

    def read() -> tuple[dict[str, str], str | None]:
        from pytest_gpuverify.history.health import session_health

        return session_health(store, spec)

    return read


class EngineRole(CollectsTargets, Role):
    """A process that runs targets: it holds the engine, collects GPU targets and writes artifacts."""

    def __init__(self, config: pytest.Config, engine: VerifySession) -> None:
        super().__init__(config)
        self.engine = engine
        config.stash[ENGINE_KEY] = engine
        self.reported: set[str] = set()  # node ids whose call phase reported
        shard: ShardSetting | None = config.stash.get(SHARD_KEY, None)
        if shard is not None:  # --gpu-shard: deselects the other shards' targets, tells the engine its shard
            shard.engine = engine
            self.helpers.append((shard, "gpuverify-shard"))

    def pytest_configure(self, config: pytest.Config) -> None:
        """Called once the role is registered: the idle window starts filling now, while pytest collects."""
        self._previous_handlers = terminate_like_ctrl_c()
        self.engine.start_in_background()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session: pytest.Session):
        with PROFILE.phase("collection"):
            yield

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.engine.mark_collected()

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        """--gpu-profile: where this process's milliseconds went (common/profile.py), the last section."""
        if config.getoption("gpu_profile", False):
            terminalreporter.write_sep("-", "gpuverify profile (this process)")
            for line in profile_lines():
                terminalreporter.write_line(line)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.reported.add(report.nodeid)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        engine = self.engine
        engine.close()  # each artifact was written as its target ended; one a second Ctrl-C cut short, here
        self.report_stopped(session)
        self.hand_back(session.config)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for problem in engine.write_problems:
            if reporter is not None:
                reporter.write_line(f"gpuverify: {problem}", red=True)
        for problem in engine.leftover_problems:  # the results stand: a leftover to clean up
            if reporter is not None:
                reporter.write_line(f"gpuverify: {problem}", yellow=True)
        if engine.fails_session() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        yield

    def report_stopped(self, session: pytest.Session) -> None:
        """A target that Ctrl-C or SIGTERM stopped ran, and has its artifact, but pytest got no report
        of it: one is made now, so pytest's own line (and a JUnit file) counts it, not "no tests ran"."""
        items = {id(i.target): i for i in getattr(session, "items", []) if isinstance(i, GpuTargetItem)}
        for outcome in self.engine.outcomes:
            item = items.get(id(outcome.target))
            if item is None or item.nodeid in self.reported:
                continue  # a fixture's run reports with its test
            art = outcome.artifact
            report = pytest.TestReport(
                item.nodeid,
                item.location,
                {},
                "passed" if art.verdict == "PASS" else "failed",
                f"{art.verdict}: stopped before its report: {'; '.join(art.reasons[:1])}",
                "call",
                user_properties=verdict_properties(art, outcome.stored_path or outcome.artifact_path),
            )
            session.config.hook.pytest_runtest_logreport(report=report)

    def hand_back(self, config: pytest.Config) -> None:
        """What goes back to whoever started this process, once the artifacts are written."""

    def pytest_report_header(self, config: pytest.Config):
        """Which conftest.py files stay in the container; with -v, the doctor's report of this host
        (read-only, as `gpuverify doctor`)."""
        lines = []
        repo = config.stash.get(NO_CONFTEST_KEY, None)
        if repo is not None:
            lines.append(
                f"gpuverify: conftest.py files of repo {repo} are not imported here: they belong to the "
                "repo's own test runs; --gpu-host-conftest imports them"
            )
        if config.option.verbose >= 1:
            from pytest_gpuverify.cli.doctor import run_doctor  # its checks' own imports: only under -v

            report = run_doctor(self.engine.env, host_name=self.engine.host_row.host)
            lines += ["gpuverify doctor:", *(f"  {line}" for line in report.lines), f"  {report.judgement()}"]
        return lines or None


def verdict_summary(config: pytest.Config, engine) -> VerdictSummary:
    """The session's summary: its CI markdown (--gpu-ci-summary) and history store (--gpu-history) too."""
    return VerdictSummary(
        engine,
        config.getoption("gpu_ci_summary"),
        option_value(config, "gpu_history"),
        config.getoption("gpu_history_ref"),
    )


class Central(EngineRole):
    """A session without xdist: it runs every target and prints the summary."""

    def __init__(self, config: pytest.Config, engine: VerifySession) -> None:
        super().__init__(config, engine)
        # the engine's outcomes also hold targets that never reported (stopped by Ctrl-C or SIGTERM)
        self.helpers.append((verdict_summary(config, lambda: engine), "gpuverify-summary"))

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        one_target_per_topic(self.engine.options.topic, [i.target.name for i in items if isinstance(i, GpuTargetItem)])
        no_outside_timeout(config, items)


class DistWorker(EngineRole):
    """An xdist worker: the targets xdist sends it; the controller checks topics and prints the summary."""

    def __init__(self, config: pytest.Config, engine: VerifySession) -> None:
        super().__init__(config, engine)
        engine.synced = synced_record(config.workerinput)  # type: ignore[attr-defined]  # set by xdist

    def pytest_configure(self, config: pytest.Config) -> None:
        super().pytest_configure(config)
        self._previous_handlers.update(name_a_lost_controller(config))

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        no_outside_timeout(config, items)
        # a worker on a GPU host: its targets' needs and topics for placement, its folder for a dead log
        tell_controller([i for i in items if isinstance(i, GpuTargetItem)], self.engine)

    def hand_back(self, config: pytest.Config) -> None:
        hand_back(config, self.engine)  # a worker on a GPU host: its files go to the controller too
        # where each artifact really went, and what could not be written where asked: for the
        # controller's summary (its reports came before the artifacts were written)
        config.workeroutput[STORED_KEY] = {  # type: ignore[attr-defined]
            str(o.artifact_path): str(o.stored_path) for o in self.engine.outcomes if o.stored_path is not None
        }
        config.workeroutput[WRITE_PROBLEMS_KEY] = list(self.engine.write_problems)  # type: ignore[attr-defined]


class DistController(Role):
    """The controller of xdist workers on this host: it runs no target, each worker samples, locks,
    runs and writes its own, and claims its artifact names in one folder, so two never write one file."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(config)
        self.summary = verdict_summary(config, lambda: None)
        self.helpers.append((self.summary, "gpuverify-summary"))
        self.claims: str | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        if self.summary.write_problems and session.exitstatus == 0:  # a worker's artifact not where asked
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        yield

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """A worker ended: where its artifacts really went, and what it could not write where asked."""
        output = getattr(node, "workeroutput", None) or {}
        self.summary.stored.update(output.get(STORED_KEY) or {})
        self.summary.write_problems += output.get(WRITE_PROBLEMS_KEY) or []

    def pytest_configure(self, config: pytest.Config) -> None:
        self.claims = claims = tempfile.mkdtemp(prefix="gpuverify-topics-")
        config.add_cleanup(lambda: shutil.rmtree(claims, ignore_errors=True))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """Tell each worker where the run's artifact names are claimed."""
        if self.claims:
            node.workerinput[CLAIMS_VARIABLE] = self.claims

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        """The one-target-per-topic check, on the node ids a worker collected, before any is sent."""
        config = node.config
        topic = config.getoption("gpu_topic")
        if not topic:
            return
        decls = config.stash.get(DECLARED_KEY, None)
        paths = [config.rootpath / i.split("::")[0] for i in ids]
        one_target_per_topic(
            topic,
            [
                i
                for i, p in zip(ids, paths)
                if kind_of(p, config) or (decls is not None and p.resolve() == Path(decls.path).resolve())
            ],
        )


class RemoteDistController(DistController):
    """The controller of workers on GPU hosts over SSH (remote/controller.py): the hosts' workers
    claim their names on their own hosts, and the collector gathers their files."""

    def __init__(self, config: pytest.Config, remote: RemoteController) -> None:
        super().__init__(config)
        self.remote = remote
        self.helpers.insert(0, (remote, "gpuverify-remote"))  # before the summary: its lines print after the summary's

    def pytest_configure(self, config: pytest.Config) -> None:
        """No claims folder: it would be a path on this host."""

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_testnodedown(self, node, error) -> None:
        """The summary names each artifact's copy here, taken in as the worker ended (remote/collect.py),
        not its path on the host."""
        super().pytest_testnodedown(node, error)
        collector = self.remote.collector
        output = getattr(node, "workeroutput", None) or {}
        for asked, stored in (output.get(STORED_KEY) or {}).items():
            local = collector.local_paths.get((node.gateway.id, Path(stored).name)) if collector else None
            if local is not None:
                self.summary.stored[asked] = str(local)
