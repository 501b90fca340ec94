"""The plugin's fixtures: GPU work from a test of one's own, recorded like collected targets.

The plugin registers this module in pytest_configure, with or without --gpu-verify."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.face.stash_keys import ENGINE_KEY

if TYPE_CHECKING:
    from pytest_gpuverify.records.artifact import Artifact


def _session(config: pytest.Config):
    """The engine of this process's role (roles.py); None without --gpu-verify or on an xdist controller."""
    return config.stash.get(ENGINE_KEY, None)


@pytest.fixture(scope="session")
def gpu_host(request: pytest.FixtureRequest):
    """The session's engine (host, GPUs, lock convention). Needs --gpu-verify; skips without it."""
    engine = _session(request.config)
    if engine is None:
        pytest.skip("GPU fixture: run with --gpu-verify")
    engine.start()  # the background start is over before a fixture picks
    return engine


@pytest.fixture
def locked_gpu(request: pytest.FixtureRequest, gpu_host):
    """Holds idle GPUs for the test, locked, and releases them after. How many: the ``gpu`` marker's
    ``gpus`` (``@pytest.mark.gpu(gpus=4)``) or an indirect parameter; default 1. Yields the grant
    (``.indices``, in the order the command sees them). No idle GPU within --gpu-wait: the test fails
    with NO_GPU and its reason."""
    from pytest_gpuverify.lease.picker import NoGpu, PickerError

    marker = request.node.get_closest_marker("gpu")
    count = int(getattr(request, "param", None) or (marker.kwargs.get("gpus", 1) if marker else 1))
    try:
        grant = gpu_host.picker.acquire(count=count, wait_s=gpu_host.options.wait_s)
    except (NoGpu, PickerError) as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield grant
    finally:
        gpu_host.picker.release(grant)


class KernelContainer:
    """Runs commands in the resolved container (or on the host with --gpu-container none) with the
    right environment, on the test's locked GPUs when it holds them; each run becomes an artifact.

    ``kind``: any target kind. A ``bench`` command runs as given; for the other kinds the command
    names the test file (``"op_tests/test_x.py -d bf16"``, with or without ``python3``/``python3 -m
    pytest`` before it), which runs as a collected target of that kind would. ``repo``: the Repos row
    whose checkout the command runs in (relative file paths are from its top), for a suite outside
    the kernel repo; else the ``gpu`` marker's ``repo``, else the checkout the test file is in."""

    def __init__(self, engine, node: pytest.Item, grant) -> None:
        self._engine, self._node, self._grant = engine, node, grant

    def run(
        self,
        command,
        *,
        kind: str = "bench",
        repo: str | None = None,
        args=(),
        topic: str | None = None,
        dtype=None,
        regime=None,
        thresholds=None,
        gpus: int = 1,
    ) -> Artifact:
        from pytest_gpuverify.config.options import check_topic
        from pytest_gpuverify.config.targets import BENCH, KINDS, Target, Thresholds, safe_topic, split_args

        if kind not in KINDS:
            pytest.fail(
                f"kernel_container.run(kind={kind!r}): not a target kind. Fix: one of {', '.join(KINDS)}", pytrace=False
            )
        topic = check_topic(topic, "kernel_container.run(topic=...)")
        marker = self._node.get_closest_marker("gpu")
        repo = repo or (marker.kwargs.get("repo") if marker is not None else None)
        argv = tuple(split_args(command) if isinstance(command, str) else command)
        path, file_args = (None, ()) if kind == BENCH else self._file_of(argv, kind, repo)
        target = Target(
            name=f"{self._node.nodeid}[{' '.join(argv)}]",
            kind=kind,
            command=argv if kind == BENCH else None,
            path=path,
            args=(*file_args, *args),
            topic=topic or safe_topic(self._node.name),
            anchor=Path(self._node.path).parent,
            repo=repo,
            dtype=dtype,
            regime=regime,
            thresholds=thresholds or Thresholds(),
            gpus=gpus,
        )
        outcome = self._engine.run(target, grant=self._grant)
        self._node.user_properties.append(
            ("gpuverify_run", f"{outcome.artifact.verdict} {outcome.stored_path or outcome.artifact_path}")
        )
        return outcome.artifact

    def _file_of(self, argv: tuple[str, ...], kind: str, repo: str | None) -> tuple[Path, tuple[str, ...]]:
        """(the test file on the host, the arguments after it) of a command of a file kind."""
        words = list(argv)
        if words and Path(words[0]).name.startswith("python"):
            words.pop(0)
            if words[:2] == ["-m", "pytest"]:
                del words[:2]
        if not words or words[0].startswith("-"):
            pytest.fail(
                f"kernel_container.run({' '.join(argv)!r}, kind={kind!r}) names no test file. Fix: name it, "
                f"e.g. kernel_container.run('op_tests/test_x.py -d bf16', kind={kind!r})",
                pytrace=False,
            )
        return self._base(repo) / words[0], tuple(words[1:])

    def _base(self, repo: str | None) -> Path:
        """Where a relative file path starts: the Repos row's checkout, else the test file's own."""
        from pytest_gpuverify.place.gitstate import git_toplevel

        if repo is not None:
            row = self._engine.env.repo(repo)
            if row is None or row.path is None:
                pytest.fail(
                    f"kernel_container.run(repo={repo!r}): not a Repos row of {self._engine.env.path} with a "
                    "path. Fix: add the row, or name one of its rows",
                    pytrace=False,
                )
            return Path(row.path)
        here = Path(self._node.path).parent
        return git_toplevel(here) or here


@pytest.fixture
def kernel_container(request: pytest.FixtureRequest, gpu_host) -> KernelContainer:
    grant = None
    if "locked_gpu" in request.fixturenames:
        grant = request.getfixturevalue("locked_gpu")
    return KernelContainer(gpu_host, request.node, grant)
