"""pytest wiring only: options, collection of GPU targets, the role of this process.

Without ``--gpu-verify`` every hook here returns at once and pytest behaves as without the plugin.
With it, pytest_configure chooses this process's role once (roles.py: one session, an xdist
controller or worker) and registers it until pytest_unconfigure; the role holds the engine,
:class:`pytest_gpuverify.engine.session.VerifySession`, where this process runs targets.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.plugin_options import add_options, option_value as _value
from pytest_gpuverify.roles import DECLARED_KEY, ENGINE_KEY, ENV_KEY, NO_CONFTEST_KEY, REMOTE_KEY, ROLE_KEY, choose_role

# The engine (pydantic's models and what they carry) is imported once --gpu-verify is on: a pytest
# run without it pays no import of it (0.23 s of CPU here), only these hooks' early returns.
if TYPE_CHECKING:
    from pytest_gpuverify.config.targets import Target
    from pytest_gpuverify.engine.artifact import Artifact

LOADED_AT = time.monotonic()  # --gpu-profile: what came before is the interpreter's and pytest's start


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
    from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file
    from pytest_gpuverify.engine.profile import PROFILE
    from pytest_gpuverify.remote.onhost import args_in_checkouts, forget_rootdir_option, serving_host
    from pytest_gpuverify.place.workspace import kernel_repo_of

    here = Path(early_config.invocation_params.dir)
    try:
        env_path = default_env_path(ns.gpu_env or early_config.getini("gpu_env") or None, os.environ)
        with PROFILE.phase("env file"):
            env = load_env_file(env_path)
        if serving_host():  # a worker on a GPU host: target paths are in the host's checkouts
            forget_rootdir_option()
            args_in_checkouts(args, ns.file_or_dir or [], env, here)
        paths = [here / arg.split("::", 1)[0] for arg in ns.file_or_dir or [] if not arg.startswith("-")] or [here]
        repo = kernel_repo_of(env, paths)
    except (EnvFileError, OSError, ValueError):
        return  # pytest_configure reports the env file's problem
    early_config.stash[ENV_KEY] = (env_path, env)  # read once: pytest_configure takes it from here
    if repo is not None:
        ns.noconftest = True
        early_config.stash[NO_CONFTEST_KEY] = repo.repo


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A session on GPU hosts over SSH: check them and give xdist their workers, before it starts."""
    if not config.getoption("gpu_verify", False) or hasattr(config, "workerinput") or config.getvalue("collectonly"):
        return
    from pytest_gpuverify.config.envfile import default_env_path, load_env_file
    from pytest_gpuverify.remote.controller import plan_remote

    try:
        env_path = default_env_path(_value(config, "gpu_env"), os.environ)
        read_early = config.stash.get(ENV_KEY, None)  # read before the initial conftests, when it could be
        env = read_early[1] if read_early and read_early[0] == env_path else load_env_file(env_path)
        remote = plan_remote(config, env, os.environ)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if remote is not None:
        config.stash[REMOTE_KEY] = remote  # its role, chosen in pytest_configure, registers it


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # registered always, so `@pytest.mark.gpu` passes --strict-markers in runs without the plugin's work
    config.addinivalue_line("markers", "gpu(gpus=N, repo=NAME): a GPU target of pytest-gpuverify; gpus is how many "
                            "GPUs it needs, repo the Repos row kernel_container runs in (a suite outside the repo)")
    if not config.getoption("gpu_verify", False):
        return
    role = choose_role(config)  # xdist has set --dist and --tx by now (its cmdline_main), a worker its workerinput
    config.stash[ROLE_KEY] = role
    role.register()


def pytest_unconfigure(config: pytest.Config) -> None:
    role = config.stash.get(ROLE_KEY, None)
    if role is not None:
        role.unregister()
        del config.stash[ROLE_KEY]


class GpuVerdict(Exception):
    """Raised by a target whose verdict is not PASS; carries the artifact for the report."""

    def __init__(self, artifact: Artifact, artifact_path: Path) -> None:
        super().__init__(artifact.verdict)
        self.artifact = artifact
        self.artifact_path = artifact_path


class GpuTargetFile(pytest.File):
    """A GPU test file on the command line: its declared targets, else one target with --gpu-args."""

    def collect(self):
        from pytest_gpuverify.config.targets import Target, topic_for

        decls = self.config.stash.get(DECLARED_KEY, None)
        declared = [t for t in (decls.targets if decls else []) if t.path and t.path.resolve() == self.path.resolve()]
        if declared and not self.config.getoption("gpu_target"):
            for target in declared:
                yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))
            return
        target = Target(name=_display_name(self.path, self.config), kind=kind_of(self.path, self.config), path=self.path,
                        topic=topic_for(self.path))
        yield GpuTargetItem.from_parent(self, name=target.topic, target=_with_cli_args(target, self.config))


class DeclarationFile(pytest.File):
    """gpuverify.toml / pyproject.toml: one item per declared target (or per --gpu-target)."""

    def collect(self):
        from pytest_gpuverify.config.declarations import select
        decls = self.config.stash[DECLARED_KEY]
        assert decls is not None, "a DeclarationFile is collected only when declarations were found"
        names = self.config.getoption("gpu_target")
        for target in select(decls, names) if names else decls.targets:
            if target.path is None and target.anchor is None:
                target = target.model_copy(update={"anchor": Path(decls.path).parent})
            yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))


def _with_cli_args(target: Target, config: pytest.Config) -> Target:
    """--gpu-args goes to every collected target, after a declaration's own args."""
    from pytest_gpuverify.config.targets import split_args

    extra = split_args(config.getoption("gpu_args") or "")
    return target.model_copy(update={"args": (*target.args, *extra)}) if extra else target


def kind_of(path: Path, config: pytest.Config) -> Optional[str]:
    """The target kind of a GPU test file (ini gpu_pytest_paths, else its name); None: not one."""
    from pytest_gpuverify.config.targets import kind_for_path

    return kind_for_path(path, tuple(config.getini("gpu_pytest_paths")), config.rootpath)


def _display_name(path: Path, config: pytest.Config) -> str:
    """The path as the user typed it: relative to where pytest was started, else to the rootdir."""
    for base in (Path(config.invocation_params.dir), config.rootpath):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


class GpuTargetItem(pytest.Item):
    """One GPU target. It runs once a session: a rerun or repeat plugin (pytest-rerunfailures'
    ``--reruns``, flaky's) that calls it again gets its first verdict again, so no retry turns a
    FAIL into a PASS and the session's exit status holds to "0 only when every target is PASS"."""

    def __init__(self, *, target: Target, **kwargs) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.add_marker("gpu")
        self.first: Optional[tuple[Artifact, Path]] = None  # the verdict of its one run
        self.calls = 0

    def runtest(self) -> None:
        from pytest_gpuverify.terminal import verdict_properties

        self.calls += 1
        if self.first is None:
            outcome = self.config.stash[ENGINE_KEY].run(self.target)
            self.first = (outcome.artifact, outcome.artifact_path)
            # what the terminal summary needs travels with the report, so it also works under xdist
            self.user_properties.extend(verdict_properties(*self.first))
        art, path = self.first
        if art.verdict != "PASS":
            raise GpuVerdict(art, path)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GpuVerdict):
            art = excinfo.value.artifact
            lines = [f"{art.verdict}: {self.target.name}"]
            lines += [f"  - {reason}" for reason in art.reasons]
            lines.append(f"  artifact: {excinfo.value.artifact_path}")
            if self.calls > 1:
                lines.append(f"  called {self.calls} times (a rerun plugin): a GPU target runs once, its first "
                             "verdict stands")
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"gpu target {self.target.name}"


# -- fixtures (fixtures.py): found by pytest on this plugin module -------------------------------
from pytest_gpuverify.fixtures import KernelContainer, gpu_host, kernel_container, locked_gpu  # noqa: E402,F401
