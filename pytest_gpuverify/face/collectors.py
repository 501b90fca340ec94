"""The collectors of GPU targets: a GPU test file or a declaration file gives one item per target,
and the item runs its target once through this process's engine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.config.declarations import (
    DeclarationError,
    Declarations,
    find_declarations,
    load_declarations,
    select,
)
from pytest_gpuverify.config.targets import Target, kind_for_path, split_args, topic_for
from pytest_gpuverify.config.topics import shared_topic_problem
from pytest_gpuverify.face.other_plugins import timeout_plugin_problem
from pytest_gpuverify.face.stash_keys import DECLARED_KEY, ENGINE_KEY
from pytest_gpuverify.face.terminal import verdict_properties
from pytest_gpuverify.remote.onhost import declarations_on_host, serving_host

if TYPE_CHECKING:
    from pytest_gpuverify.config.envfile import EnvFile
    from pytest_gpuverify.records.artifact import Artifact


class GpuVerdict(Exception):
    """Raised by a target whose verdict is not PASS; carries the artifact for the report."""

    def __init__(self, artifact: Artifact, artifact_path: Path) -> None:
        super().__init__(artifact.verdict)
        self.artifact = artifact
        self.artifact_path = artifact_path


class GpuTargetFile(pytest.File):
    """A GPU test file on the command line: its declared targets, else one target with --gpu-args."""

    def collect(self):
        decls = self.config.stash.get(DECLARED_KEY, None)
        declared = [t for t in (decls.targets if decls else []) if t.path and t.path.resolve() == self.path.resolve()]
        if declared and not self.config.getoption("gpu_target"):
            for target in declared:
                yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))
            return
        target = Target(
            name=_display_name(self.path, self.config),
            kind=kind_of(self.path, self.config),
            path=self.path,
            topic=topic_for(self.path),
        )
        yield GpuTargetItem.from_parent(self, name=target.topic, target=_with_cli_args(target, self.config))


class DeclarationFile(pytest.File):
    """gpuverify.toml / pyproject.toml: one item per declared target (or per --gpu-target)."""

    def collect(self):
        decls = self.config.stash[DECLARED_KEY]
        assert decls is not None, "a DeclarationFile is collected only when declarations were found"
        names = self.config.getoption("gpu_target")
        for target in select(decls, names) if names else decls.targets:
            if target.path is None and target.anchor is None:
                target = target.model_copy(update={"anchor": Path(decls.path).parent})
            yield GpuTargetItem.from_parent(self, name=target.name, target=_with_cli_args(target, self.config))


def _with_cli_args(target: Target, config: pytest.Config) -> Target:
    """--gpu-args goes to every collected target, after a declaration's own args."""
    extra = split_args(config.getoption("gpu_args") or "")
    return target.model_copy(update={"args": (*target.args, *extra)}) if extra else target


def kind_of(path: Path, config: pytest.Config) -> str | None:
    """The target kind of a GPU test file (ini gpu_pytest_paths, else its name); None: not one."""
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
        self.first: tuple[Artifact, Path] | None = None  # the verdict of its one run
        self.calls = 0

    def runtest(self) -> None:
        self.calls += 1
        if self.first is None:
            outcome = self.config.stash[ENGINE_KEY].run(self.target)
            self.first = (outcome.artifact, outcome.stored_path or outcome.artifact_path)  # written as it ended
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
                lines.append(
                    f"  called {self.calls} times (a rerun plugin): a GPU target runs once, its first verdict stands"
                )
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"gpu target {self.target.name}"


class CollectsTargets:
    """The collection hooks of a role that collects GPU targets: one that runs them (roles.EngineRole)
    or one that submits them to Slurm (slurm_role.SlurmController)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector):
        """GPU test files become targets instead of modules: the host has no torch to import them."""
        if kind_of(module_path, parent.config) is None:
            return None
        return GpuTargetFile.from_parent(parent, path=module_path)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        """The declaration file, when named on the command line or selected through --gpu-target."""
        decls = parent.config.stash.get(DECLARED_KEY, None)
        if decls is None or file_path.resolve() != Path(decls.path).resolve():
            return None
        return DeclarationFile.from_parent(parent, path=file_path)


def load_declarations_of(config: pytest.Config, env: EnvFile) -> Declarations | None:
    """The repo's declared targets (or None). With --gpu-target, the declaration file is what pytest
    collects, so `pytest --gpu-verify --gpu-target X` runs X and nothing else."""
    start = Path(config.invocation_params.dir)
    stop = config.rootpath if start.is_relative_to(config.rootpath) else start
    path = find_declarations(start, stop)
    names = config.getoption("gpu_target")
    if path is None and names and serving_host():
        path = declarations_on_host(env, names)
    if path is None:
        if names:
            raise DeclarationError(
                start,
                f"--gpu-target: no gpuverify.toml or [tool.gpuverify] found in {start} or above it",
                "declare the targets (see conftest_examples/), or pass target paths",
            )
        return None
    decls = load_declarations(path)
    if names:
        select(decls, names)  # unknown names stop the run here, naming the known ones
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.append(str(path))
        else:
            config.args[:] = [str(path)]
    return decls


def no_outside_timeout(config: pytest.Config, items: list) -> None:
    problem = timeout_plugin_problem(config, [i for i in items if isinstance(i, GpuTargetItem)])
    if problem:
        raise pytest.UsageError(problem)


def one_target_per_topic(topic: str | None, names: list[str]) -> None:
    problem = shared_topic_problem(topic, names)
    if problem:  # --gpu-topic names one artifact
        raise pytest.UsageError(problem)
