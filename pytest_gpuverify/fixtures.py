"""The plugin's fixtures: GPU work from a test of one's own, recorded like collected targets.

pytest finds them on the plugin module, which imports them from here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from pytest_gpuverify.roles import ENGINE_KEY

if TYPE_CHECKING:
    from pytest_gpuverify.engine.artifact import Artifact


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
    right environment, on the test's locked GPUs when it holds them; each run becomes an artifact."""

    def __init__(self, engine, node: pytest.Item, grant) -> None:
        self._engine, self._node, self._grant = engine, node, grant

    def run(self, command, *, kind: str = "bench", args=(), topic: Optional[str] = None, dtype=None,
            regime=None, thresholds=None, gpus: int = 1) -> Artifact:
        from pytest_gpuverify.config.targets import Thresholds, safe_topic

        from pytest_gpuverify.config.options import check_topic
        from pytest_gpuverify.config.targets import Target, split_args

        topic = check_topic(topic, "kernel_container.run(topic=...)")
        argv = tuple(split_args(command) if isinstance(command, str) else command)
        target = Target(
            name=f"{self._node.nodeid}[{' '.join(argv)}]", kind=kind, command=argv, args=tuple(args),
            topic=topic or safe_topic(self._node.name), anchor=Path(self._node.path).parent, dtype=dtype,
            regime=regime, thresholds=thresholds or Thresholds(), gpus=gpus,
        )
        outcome = self._engine.run(target, grant=self._grant)
        self._node.user_properties.append(("gpuverify_run", f"{outcome.artifact.verdict} {outcome.artifact_path}"))
        return outcome.artifact


@pytest.fixture
def kernel_container(request: pytest.FixtureRequest, gpu_host) -> KernelContainer:
    grant = None
    if "locked_gpu" in request.fixturenames:
        grant = request.getfixturevalue("locked_gpu")
    return KernelContainer(gpu_host, request.node, grant)
