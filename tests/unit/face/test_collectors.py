"""Collection with --gpu-verify (face/collectors.py): a GPU test file becomes one target item (never
imported), a declaration file one item per declared target, and each item runs once through the
process's engine, its verdict deciding the test's outcome."""

from __future__ import annotations

import subprocess

import pytest
from conftest import EngineInStash

pytest_plugins = ["pytester"]

DECLARED = """
[[targets]]
name = "gemm-perf"
kind = "bench"
command = ["python3", "bench_gemm.py"]

[[targets]]
name = "softmax-perf"
kind = "bench"
command = ["python3", "bench_softmax.py"]
"""


def test_a_gpu_test_file_is_one_target_run_by_the_engine(pytester: pytest.Pytester, gpu_args, engine, op_test):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_inprocess(*gpu_args, "-rA", plugins=[EngineInStash(engine)])
    result.assert_outcomes(passed=2)  # the target, and the session's own test beside it
    for line in ("PASSED op_tests/test_gemm.py::gemm", "PASSED test_plain.py::test_plain"):  # pytest's order varies
        result.stdout.fnmatch_lines([line])
    assert [c for c in engine.calls if c.startswith("run")] == ["run gemm"]
    assert engine.calls.index("mark_collected") < engine.calls.index("run gemm") < engine.calls.index("close")


def test_a_failed_verdict_fails_the_item_with_its_reasons_and_artifact(
    pytester: pytest.Pytester, gpu_args, engine, op_test
):
    engine.verdicts["gemm"] = "FAIL"
    result = pytester.runpytest_inprocess(*gpu_args, plugins=[EngineInStash(engine)])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAIL: op_tests/test_gemm.py",
            "  - gemm: the stand-in engine's FAIL",
            f"  artifact: {engine.out_dir / 'bench_gemm.json'}",
        ]
    )


def test_inconclusive_has_its_own_status_letter(pytester: pytest.Pytester, gpu_args, engine, op_test):
    engine.verdicts["gemm"] = "INCONCLUSIVE"
    result = pytester.runpytest_inprocess(*gpu_args, plugins=[EngineInStash(engine)])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["op_tests/test_gemm.py I*", "*1 inconclusive*"])


def test_collect_only_lists_targets_and_runs_none(pytester: pytest.Pytester, gpu_args, engine, op_test):
    result = pytester.runpytest_inprocess(*gpu_args, "--collect-only", "-q", plugins=[EngineInStash(engine)])
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["op_tests/test_gemm.py::gemm", "*--collect-only: GPU targets were collected*"])
    assert not [c for c in engine.calls if c.startswith("run")]


def test_gpu_target_runs_the_declared_target_it_names_and_nothing_else(
    pytester: pytest.Pytester, gpu_args, engine, op_test
):
    pytester.path.joinpath("gpuverify.toml").write_text(DECLARED, encoding="utf-8")
    result = pytester.runpytest_inprocess(
        *gpu_args, "--gpu-target", "softmax-perf", "-rA", plugins=[EngineInStash(engine)]
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED gpuverify.toml::softmax-perf"])
    assert [c for c in engine.calls if c.startswith("run")] == ["run softmax-perf"]


def test_an_unknown_declared_target_is_a_usage_error_naming_the_known_ones(pytester: pytest.Pytester, gpu_args, engine):
    pytester.path.joinpath("gpuverify.toml").write_text(DECLARED, encoding="utf-8")
    result = pytester.runpytest_inprocess(*gpu_args, "--gpu-target", "gemm", plugins=[EngineInStash(engine)])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gemm*gemm-perf*softmax-perf*"])


def test_changed_since_runs_the_targets_a_change_touched_and_says_which_were_skipped(
    pytester: pytest.Pytester, gpu_args, engine
):
    """A checkout where only bench_gemm.py changed since ``base``: gemm-perf runs, softmax-perf is
    deselected, and one line names it."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(pytester.path), *args], check=True, capture_output=True)

    pytester.path.joinpath("gpuverify.toml").write_text(DECLARED, encoding="utf-8")
    for name in ("bench_gemm.py", "bench_softmax.py"):
        pytester.path.joinpath(name).write_text("print('| m | us |')\n", encoding="utf-8")
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    git("tag", "base")
    pytester.path.joinpath("bench_gemm.py").write_text("print('| m | us | faster |')\n", encoding="utf-8")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "gemm changed")
    result = pytester.runpytest_inprocess(
        *gpu_args, "--gpu-changed-since", "base", "-rA", plugins=[EngineInStash(engine)]
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*--gpu-changed-since base: 1 of 2 target(s) run; skipped, none of their files changed: softmax-perf*"]
    )
    assert [c for c in engine.calls if c.startswith("run")] == ["run gemm-perf"]
