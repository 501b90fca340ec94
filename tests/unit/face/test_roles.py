"""The role of a --gpu-verify process (face/roles.py): chosen once in pytest_configure, registered for
the session and gone after it, with the signal handlers it replaced put back; the summary it prints;
the shard it keeps."""

from __future__ import annotations

import signal

import pytest
from conftest import EngineInStash

pytest_plugins = ["pytester"]


def test_a_session_without_xdist_is_central_and_leaves_nothing_registered(
    pytester: pytest.Pytester, gpu_args, engine, op_test
):
    engine.verdicts["gemm"] = "FAIL"
    before = signal.getsignal(signal.SIGTERM)
    spy = EngineInStash(engine)
    result = pytester.runpytest_inprocess(*gpu_args, plugins=[spy])
    assert spy.roles == ["Central"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= gpuverify =*",
            f"FAIL * op_tests/test_gemm.py::gemm  gpu -  gemm: the stand-in engine's FAIL  -> {engine.out_dir}/bench_gemm.json",
        ]
    )
    assert engine.calls[0] == "start_in_background"  # at configure: the idle window fills while pytest collects
    assert signal.getsignal(signal.SIGTERM) is before  # SIGTERM took Ctrl-C's path only while the role lasted


def test_a_shard_keeps_its_targets_and_tells_the_engine(pytester: pytest.Pytester, gpu_args, engine, op_test):
    for name in ("test_rmsnorm.py", "test_softmax.py", "test_topk.py"):
        op_test.with_name(name).write_text("import torch\n", encoding="utf-8")
    result = pytester.runpytest_inprocess(*gpu_args, "--gpu-shard", "1/2", plugins=[EngineInStash(engine)])
    ran = [c.removeprefix("run ") for c in engine.calls if c.startswith("run ")]
    assert 0 < len(ran) < 4
    result.stdout.fnmatch_lines([f"gpuverify: shard 1/2 (--gpu-shard 1/2): {len(ran)} of 4 GPU targets"])
    result.assert_outcomes(passed=len(ran), deselected=4 - len(ran))
    assert engine.shard is not None and (engine.shard.index, engine.shard.count) == (1, 2)


def test_slurm_with_xdist_workers_is_a_usage_error(pytester: pytest.Pytester, gpu_args, engine, op_test):
    result = pytester.runpytest_inprocess(
        *gpu_args, "-p", "xdist", "--gpu-slurm", "-n", "2", plugins=[EngineInStash(engine)]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-slurm runs each GPU target as its own Slurm job*drop -n / --dist*"])
    assert engine.calls == []  # no role was registered: nothing of the engine's was called
