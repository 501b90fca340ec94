"""The options of a ``--gpu-verify`` run (face/options.py, the role's choice): a bad value or a bad
combination stops the run as a usage error (exit 4) naming the option and the fix, before any target."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--gpu-window", "soon"), ["*--gpu-window*"]),
        (("--gpu-slurm-shards", "2"), ["*--gpu-slurm-shards splits the jobs --gpu-slurm submits*add --gpu-slurm*"]),
        (("--gpu-shard-run", "r1"), ["*--gpu-shard-run and --gpu-durations split a run into shards*--gpu-shard I/N*"]),
        (("--gpu-slurm", "--gpu-shard", "0/2"), ["*--gpu-shard and --gpu-hosts split the targets another way*"]),
        (("--gpu-target", "nope"), ["*--gpu-target: no gpuverify.toml or [[]tool.gpuverify[]] found*"]),
    ],
    ids=["bad-seconds", "slurm-shards-alone", "shard-run-alone", "slurm-and-shard", "target-undeclared"],
)
def test_a_bad_option_is_a_usage_error_naming_it(pytester: pytest.Pytester, gpu_args, engine, args, says):
    from conftest import EngineInStash

    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess(*gpu_args, *args, plugins=[EngineInStash(engine)])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(says)
    assert "run " not in " ".join(engine.calls)  # no target ran


def test_a_missing_env_file_is_a_usage_error_naming_the_file(pytester: pytest.Pytester, gpu_args, tmp_path: Path):
    missing = tmp_path / "nowhere" / "env.md"
    args = [a for a in gpu_args if not a.startswith("--gpu-env")] + [f"--gpu-env={missing}"]
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{missing}*does not exist*"])
