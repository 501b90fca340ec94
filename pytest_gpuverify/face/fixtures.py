"""The work of the plugin's fixtures (``gpu_host``, ``locked_gpu``, ``kernel_container``, declared in
pytest_gpuverify/plugin.py so that they exist with or without --gpu-verify): GPU work from a test of
one's own, recorded like collected targets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_gpuverify.config.options import check_topic
from pytest_gpuverify.config.targets import BENCH, KINDS, Target, Thresholds, safe_topic, split_args
from pytest_gpuverify.face.stash_keys import ENGINE_KEY
from pytest_gpuverify.lease.picker import NoGpu, PickerError
from pytest_gpuverify.place.gitstate import git_toplevel
from pytest_gpuverify.records.artifact import Artifact


def session_engine(config: pytest.Config):
    """The engine of this process's role (face/roles.py), its background start over before a fixture
    picks; skips where this process runs no targets (an xdist controller, a --gpu-slurm session)."""
    engine = config.stash.get(ENGINE_KEY, None)
    if engine is None:
        pytest.skip("GPU fixture: run with --gpu-verify")
    engine.start()
    return engine


def held_gpus(request: pytest.FixtureRequest, engine) -> Iterator[object]:
    """``locked_gpu``: the grant of the test's GPUs (the ``gpu`` marker's ``gpus``, or an indirect
    parameter; default 1), held for the test and released after; NO_GPU fails the test with its reason."""
    marker = request.node.get_closest_marker("gpu")
    count = int(getattr(request, "param", None) or (marker.kwargs.get("gpus", 1) if marker else 1))
    try:
        grant = engine.picker.acquire(count=count, wait_s=engine.options.wait_s)
    except (NoGpu, PickerError) as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield grant
    finally:
        engine.picker.release(grant)


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
        outcome = self._engine.run(target, grant=self._grant, test_decides=True)  # the test judges it
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
