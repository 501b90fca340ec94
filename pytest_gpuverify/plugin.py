"""pytest wiring only: options, collection of GPU targets, the run hook, reporting.

Without ``--gpu-verify`` every hook here returns at once and pytest behaves as without the plugin.
The engine is :class:`pytest_gpuverify.engine.session.VerifySession`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from pytest_gpuverify.engine.artifact import Artifact
from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file
from pytest_gpuverify.config.options import RunOptions, SetupError, check_repeats, check_seconds, check_ticket, check_topic  # noqa: F401
from pytest_gpuverify.plugin_options import add_options, build_options, option_value as _value  # noqa: F401  (re-exported)
from pytest_gpuverify.terminal import VerdictSummary, live_line, verdict_properties
from pytest_gpuverify.config.targets import Target, kind_for_path, split_args, topic_for

if TYPE_CHECKING:  # imported when a session starts: a run without --gpu-verify never pays for them
    from pytest_gpuverify.config.declarations import Declarations
    from pytest_gpuverify.engine.session import VerifySession

_SESSION_KEY: pytest.StashKey[VerifySession] = pytest.StashKey()
_DECLARED_KEY: pytest.StashKey[Optional[Declarations]] = pytest.StashKey()
_NO_CONFTEST_KEY = pytest.StashKey[str]()  # the kernel repo whose conftest.py files are not imported
_ENV_KEY = pytest.StashKey[tuple]()  # (path, EnvFile) as read before the initial conftests
_CLAIMS_KEY = pytest.StashKey[str]()  # xdist controller: the folder where its workers claim topics
_REMOTE_KEY = pytest.StashKey[object]()  # xdist controller of workers on GPU hosts over SSH (remote/)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """A session inside a kernel repo's checkout does not import the repo's conftest.py files: they
    belong to its own pytest runs in the container (FlyDSL's turns "no test ran" into exit 0, and
    skips files by the arch it finds; on the host they could drop targets or hide an empty run, or
    fail to import torch)."""
    ns = early_config.known_args_namespace
    if not getattr(ns, "gpu_verify", False) or ns.noconftest or getattr(ns, "gpu_host_conftest", False):
        return
    from pytest_gpuverify.remote.onhost import args_in_checkouts, forget_rootdir_option, serving_host
    from pytest_gpuverify.place.workspace import kernel_repo_of

    here = Path(early_config.invocation_params.dir)
    try:
        env_path = default_env_path(ns.gpu_env or early_config.getini("gpu_env") or None, os.environ)
        env = load_env_file(env_path)
        if serving_host():  # a worker on a GPU host: target paths are in the host's checkouts
            forget_rootdir_option()
            args_in_checkouts(args, ns.file_or_dir or [], env, here)
        paths = [here / arg.split("::", 1)[0] for arg in ns.file_or_dir or [] if not arg.startswith("-")] or [here]
        repo = kernel_repo_of(env, paths)
    except (EnvFileError, OSError, ValueError):
        return  # pytest_configure reports the env file's problem
    early_config.stash[_ENV_KEY] = (env_path, env)  # read once: pytest_configure takes it from here
    if repo is not None:
        ns.noconftest = True
        early_config.stash[_NO_CONFTEST_KEY] = repo.repo


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A session on GPU hosts over SSH: check them and give xdist their workers, before it starts."""
    if not config.getoption("gpu_verify", False) or hasattr(config, "workerinput") or config.getvalue("collectonly"):
        return
    from pytest_gpuverify.remote.controller import plan_remote

    try:
        env = load_env_file(default_env_path(_value(config, "gpu_env"), os.environ))
        remote = plan_remote(config, env, os.environ)
    except (SetupError, EnvFileError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if remote is not None:
        config.stash[_REMOTE_KEY] = remote
        config.pluginmanager.register(remote, "gpuverify-remote")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # registered always, so `@pytest.mark.gpu` passes --strict-markers in runs without the plugin's work
    config.addinivalue_line("markers", "gpu(gpus=N): a GPU target of pytest-gpuverify; gpus is how many GPUs it needs")
    if not config.getoption("gpu_verify", False):
        return
    from pytest_gpuverify.config.declarations import DeclarationError
    from pytest_gpuverify.reporting.live import running_line_wanted
    from pytest_gpuverify.engine.session import VerifySession, echo_to_stdout
    from pytest_gpuverify.config.topics import TopicClaims
    from pytest_gpuverify.remote.waitline import on_wait_for

    if _REMOTE_KEY in config.stash:  # the controller of workers on GPU hosts runs no target itself
        config.pluginmanager.register(VerdictSummary(lambda: None, config.getoption("gpu_ci_summary")), "gpuverify-summary")
        return
    try:
        options = build_options(config)
        read_early = config.stash.get(_ENV_KEY, None)
        env = read_early[1] if read_early and read_early[0] == options.env_path else load_env_file(options.env_path)
        declared = _load_declarations(config, env)
        session = VerifySession(options, env, echo=echo_to_stdout if options.echo_output else None,
                                on_wait=on_wait_for(config),
                                topics=TopicClaims(getattr(config, "workerinput", {}).get("gpuverify_topic_claims")),
                                on_running=live_line(config) if running_line_wanted(config, options.echo_output) else None)
    except (SetupError, EnvFileError, DeclarationError) as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_DECLARED_KEY] = declared
    if hasattr(config, "workerinput"):
        from pytest_gpuverify.remote.onhost import synced_record

        session.synced = synced_record(config.workerinput)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(VerdictSummary(lambda: _session(config), config.getoption("gpu_ci_summary")),
                                      "gpuverify-summary")
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        import shutil
        import tempfile

        # the controller runs no target: each worker samples, locks, runs and writes its own, and
        # claims its artifact names in this folder, so two workers never write one file
        config.stash[_CLAIMS_KEY] = claims = tempfile.mkdtemp(prefix="gpuverify-topics-")
        config.add_cleanup(lambda: shutil.rmtree(claims, ignore_errors=True))
        return
    config.stash[_SESSION_KEY] = session
    _terminate_like_ctrl_c()
    session.start_in_background()  # the idle window starts filling now, while pytest collects


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: tell each worker where the run's artifact names are claimed."""
    claims = node.config.stash.get(_CLAIMS_KEY, None)
    if claims:
        node.workerinput["gpuverify_topic_claims"] = claims


def _terminate_like_ctrl_c() -> None:
    """SIGTERM (a CI job cancelled, a scheduler's stop) takes Ctrl-C's path: the command is stopped,
    the lock released and the artifact written with the reason."""
    import signal
    import threading

    from pytest_gpuverify.execute.container import Terminated

    def on_term(signum, frame):
        raise Terminated("SIGTERM")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)


def _load_declarations(config: pytest.Config, env):
    """The repo's declared targets (or None). With --gpu-target, the declaration file is what pytest
    collects, so `pytest --gpu-verify --gpu-target X` runs X and nothing else."""
    from pytest_gpuverify.config.declarations import DeclarationError, find_declarations, load_declarations, select

    start = Path(config.invocation_params.dir)
    stop = config.rootpath if start.is_relative_to(config.rootpath) else start
    path = find_declarations(start, stop)
    names = config.getoption("gpu_target")
    from pytest_gpuverify.remote.onhost import declarations_on_host, serving_host

    if path is None and names and serving_host():
        path = declarations_on_host(env, names)
    if path is None:
        if names:
            raise DeclarationError(start, f"--gpu-target: no gpuverify.toml or [tool.gpuverify] found in {start} "
                                   "or above it", "declare the targets (see conftest_examples/), or pass target paths")
        return None
    decls = load_declarations(path)
    if names:
        select(decls, names)  # unknown names stop the run here, naming the known ones
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.append(str(path))
        else:
            config.args[:] = [str(path)]
    return decls


def _session(config: pytest.Config):
    return config.stash.get(_SESSION_KEY, None)


def pytest_collection_finish(session: pytest.Session) -> None:
    engine = _session(session.config)
    if engine is not None:
        engine.mark_collected()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector):
    """GPU test files become targets instead of modules: the host has no torch to import them."""
    if _session(parent.config) is None or _kind(module_path, parent.config) is None:
        return None
    return GpuTargetFile.from_parent(parent, path=module_path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """The declaration file, when named on the command line or selected through --gpu-target."""
    decls = parent.config.stash.get(_DECLARED_KEY, None)
    if decls is None or file_path.resolve() != Path(decls.path).resolve():
        return None
    return DeclarationFile.from_parent(parent, path=file_path)


class GpuVerdict(Exception):
    """Raised by a target whose verdict is not PASS; carries the artifact for the report."""

    def __init__(self, artifact: Artifact, artifact_path: Path) -> None:
        super().__init__(artifact.verdict)
        self.artifact = artifact
        self.artifact_path = artifact_path


class GpuTargetFile(pytest.File):
    """A GPU test file on the command line: its declared targets, else one target with --gpu-args."""

    def collect(self):
        decls = self.config.stash.get(_DECLARED_KEY, None)
        declared = [t for t in (decls.targets if decls else []) if t.path and t.path.resolve() == self.path.resolve()]
        if declared and not self.config.getoption("gpu_target"):
            for target in declared:
                yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))
            return
        target = Target(name=_display_name(self.path, self.config), kind=_kind(self.path, self.config), path=self.path,
                        topic=topic_for(self.path))
        yield GpuTargetItem.from_parent(self, name=target.topic, target=_with_cli_args(target, self.config))


class DeclarationFile(pytest.File):
    """gpuverify.toml / pyproject.toml: one item per declared target (or per --gpu-target)."""

    def collect(self):
        from pytest_gpuverify.config.declarations import select

        decls = self.config.stash[_DECLARED_KEY]
        names = self.config.getoption("gpu_target")
        for target in select(decls, names) if names else decls.targets:
            if target.path is None and target.anchor is None:
                target = target.model_copy(update={"anchor": Path(decls.path).parent})
            yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))


def _with_cli_args(target: Target, config: pytest.Config) -> Target:
    """--gpu-args goes to every collected target, after a declaration's own args."""
    extra = split_args(config.getoption("gpu_args") or "")
    return target.model_copy(update={"args": (*target.args, *extra)}) if extra else target


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    engine = _session(config)
    if engine is not None and not hasattr(config, "workerinput"):  # xdist: the controller checks
        _one_target_per_topic(engine.options.topic, [i.target.name for i in items if isinstance(i, GpuTargetItem)])
    from pytest_gpuverify.remote.onhost import tell_controller

    tell_controller([i for i in items if isinstance(i, GpuTargetItem)], engine)  # a worker on a GPU host


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids) -> None:
    """xdist controller: the same check, on the node ids a worker collected, before any is sent."""
    config = node.config
    if config.getoption("gpu_verify") and config.getoption("gpu_topic"):
        decls = config.stash.get(_DECLARED_KEY, None)
        paths = [config.rootpath / i.split("::")[0] for i in ids]
        _one_target_per_topic(config.getoption("gpu_topic"), [i for i, p in zip(ids, paths) if _kind(p, config)
                              or (decls is not None and p.resolve() == Path(decls.path).resolve())])


def _one_target_per_topic(topic: Optional[str], names: list[str]) -> None:
    from pytest_gpuverify.config.topics import shared_topic_problem

    if shared_topic_problem(topic, names):  # --gpu-topic names one artifact
        raise pytest.UsageError(shared_topic_problem(topic, names))


def _kind(path: Path, config: pytest.Config) -> Optional[str]:
    return kind_for_path(path, tuple(config.getini("gpu_pytest_paths")), config.rootpath)


def _display_name(path: Path, config: pytest.Config) -> str:
    """The path as the user typed it: relative to where pytest was started, else to the rootdir."""
    for base in (Path(config.invocation_params.dir), config.rootpath):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


class GpuTargetItem(pytest.Item):
    def __init__(self, *, target: Target, **kwargs) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.add_marker("gpu")

    def runtest(self) -> None:
        outcome = _session(self.config).run(self.target)
        art = outcome.artifact
        # what the terminal summary needs travels with the report, so it also works under xdist
        self.user_properties.extend(verdict_properties(art, outcome.artifact_path))
        if art.verdict != "PASS":
            raise GpuVerdict(art, outcome.artifact_path)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GpuVerdict):
            art = excinfo.value.artifact
            lines = [f"{art.verdict}: {self.target.name}"]
            lines += [f"  - {reason}" for reason in art.reasons]
            lines.append(f"  artifact: {excinfo.value.artifact_path}")
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"gpu target {self.target.name}"


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if report.when != "call":
        return None
    verdict = dict(report.user_properties).get("gpuverify_verdict")
    if verdict == "INCONCLUSIVE":
        return "inconclusive", "I", "INCONCLUSIVE"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    engine = _session(session.config)
    if engine is not None:
        engine.close()  # artifacts are written here, also after Ctrl-C (by the worker that ran them)
        from pytest_gpuverify.remote.onhost import hand_back

        hand_back(session.config, engine)  # a worker on a GPU host: its files go to the controller too
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for problem in engine.write_problems:
            if reporter is not None:
                reporter.write_line(f"gpuverify: {problem}", red=True)
        if (engine.write_problems or any(o.artifact.verdict != "PASS" for o in engine.outcomes)) \
                and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    yield


def pytest_report_header(config: pytest.Config):
    """Which conftest.py files stay in the container; with -v, the doctor's report of this host
    (read-only, as `gpuverify doctor`)."""
    engine = _session(config)
    if engine is None:
        return None
    lines = []
    repo = config.stash.get(_NO_CONFTEST_KEY, None)
    if repo is not None:
        lines.append(f"gpuverify: conftest.py files of repo {repo} are not imported here: they belong to the "
                     "repo's own test runs; --gpu-host-conftest imports them")
    if config.option.verbose >= 1:
        from pytest_gpuverify.cli.doctor import run_doctor

        report = run_doctor(engine.env, host_name=engine.host_row.host)
        lines += ["gpuverify doctor:", *(f"  {line}" for line in report.lines), f"  {report.judgement()}"]
    return lines or None


# -- fixtures (fixtures.py): found by pytest on this plugin module -------------------------------
from pytest_gpuverify.fixtures import KernelContainer, gpu_host, kernel_container, locked_gpu  # noqa: E402,F401
