"""The plugin's fixtures from a suite of one's own, outside the kernel repo (pytester's folder): each
fixture, and kernel_container.run with every target kind; the repo is named by the ``gpu`` marker's
``repo`` or run()'s ``repo=``."""

from __future__ import annotations

import os

import pytest

from pytest_gpuverify.cli import demo

pytestmark = pytest.mark.docker
pytest_plugins = ("pytester",)

SUITE = """
import pytest


def test_gpu_host(gpu_host):
    assert gpu_host.host_row.host and sorted(gpu_host.inventory) == [0, 1, 2, 3]


@pytest.mark.gpu(gpus=2)
def test_locked_gpu(locked_gpu):
    from pytest_gpuverify.lease.lock import is_locked_elsewhere

    assert len(locked_gpu.indices) == 2
    assert all(is_locked_elsewhere(lease.path) for lease in locked_gpu.leases)


@pytest.mark.gpu(repo="aiter")
@pytest.mark.parametrize("kind,command", [
    ("aiter-op-test", "python3 op_tests/test_rmsnorm2d.py"),
    ("triton-pytest", "op_tests/triton_tests/test_triton_softmax.py"),
    ("pytest", "python3 -m pytest op_tests/triton_tests/test_triton_softmax.py -k 1024"),
    ("bench", "python3 op_tests/test_gemm_a8w8.py -d bf16"),
])
def test_kernel_container_runs_every_kind(kernel_container, kind, command):
    art = kernel_container.run(command, kind=kind, topic=f"own-{kind}")
    assert art.verdict == "PASS", art.reasons
    assert art.target.kind == kind and "None" not in art.command, art.command
    assert art.repos and art.repos[0].path.endswith("/repos/aiter"), art.repos


def test_kernel_container_in_a_repo_named_by_run(kernel_container):
    art = kernel_container.run("tests/kernels/test_rmsnorm.py", kind="flydsl-pytest", repo="FlyDSL",
                               topic="own-flydsl")
    assert art.verdict == "PASS", art.reasons
    assert art.imports["flydsl"] == "/workspace/FlyDSL/python/flydsl/__init__.py"
"""


def test_each_fixture_and_every_kind_from_a_suite_of_ones_own(sandbox, flydsl, pytester, monkeypatch):  # noqa: F811
    demo.install_pytest(sandbox.client, sandbox.container)  # the pytest kinds run pytest in the container
    monkeypatch.setenv("PATH", f"{sandbox.sim_bin}:{os.environ['PATH']}")
    monkeypatch.delenv("GPUVERIFY_ENV", raising=False)
    pytester.makepyfile(test_own_suite=SUITE)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        "-p",
        "no:hypothesispytest",
        "-rA",
        "--gpu-verify",
        "--gpu-window",
        "0.3",
        "--gpu-env",
        str(sandbox.env_path),
        "--ticket",
        "T-1",
        timeout=600,
    )
    text = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=7)
    arts = sorted(p.name for p in (sandbox.tickets / "T-1").glob("bench_own-*.json"))
    assert arts == [
        "bench_own-aiter-op-test.json",
        "bench_own-bench.json",
        "bench_own-flydsl.json",
        "bench_own-pytest.json",
        "bench_own-triton-pytest.json",
    ], text[-3000:]
    assert sandbox.artifact("own-aiter-op-test").command == "python3 op_tests/test_rmsnorm2d.py"
