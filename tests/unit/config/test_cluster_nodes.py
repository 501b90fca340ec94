"""A cluster's node without a Hosts row of its own describes itself inside a Slurm job; the env file's
per-machine rows apply only to the machines they name; a one-task array needs its count."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pytest_gpuverify.config.envfile import parse_env_text
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.hosts import lock_for, select_host
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.config.shards import parse_spec

LOGIN = "login-node-that-is-not-here"


def env_text(lock_rows: str) -> str:
    return (
        "## Hosts\n\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n"
        f"| {LOGIN} | local | gfx90a | 8 |\n\n## GPU lock\n\n| host | picker | lock |\n|---|---|---|\n" + lock_rows
    )


def test_a_slurm_node_without_a_row_describes_itself(tmp_path):
    (tmp_path / "locks").mkdir()
    env = parse_env_text(
        env_text(f"| * | builtin | `flock -E 75 -w 600 {tmp_path}/locks/gpu-<id>.lock` |\n"), tmp_path / "env.md"
    )
    row = select_host(env, RunOptions(env_path=env.path), {"SLURM_JOB_ID": "12"})
    assert (row.host, row.is_local, row.arch, row.gpus) == (socket.gethostname(), True, None, None), (
        "its hostname; the login row's arch and GPU count are not its facts"
    )
    spec, picker = lock_for(env, row)
    assert spec.path_template == f"{tmp_path}/locks/gpu-<id>.lock" and picker is None
    with_arch = select_host(env, RunOptions(env_path=env.path, arch="GFX942"), {"SLURM_JOB_ID": "12"})
    assert with_arch.arch == "gfx942"


def test_outside_a_slurm_job_a_machine_the_rows_do_not_name_is_still_refused(tmp_path):
    env = parse_env_text(env_text(""), tmp_path / "env.md")
    with pytest.raises(UsageError) as err:
        select_host(env, RunOptions(env_path=env.path), {})
    assert f"the local row of Hosts in {env.path} is {LOGIN!r}" in str(err.value)


def test_another_machines_lock_row_does_not_apply(tmp_path):
    env = parse_env_text(
        env_text(f"| {LOGIN} | builtin | `flock -E 75 -w 600 /tmp/locks/gpu-<id>.lock` |\n"), tmp_path / "env.md"
    )
    row = select_host(env, RunOptions(env_path=env.path), {"SLURM_JOB_ID": "12"})
    with pytest.raises(UsageError) as err:
        lock_for(env, row)
    text = str(err.value)
    assert f"no row for host {row.host}" in text and "| * | builtin |" in text and "\n" not in text


def test_a_named_node_keeps_its_own_row(tmp_path):
    here = socket.gethostname()
    for sub in ("mine", "any"):
        (tmp_path / sub).mkdir()
    env = parse_env_text(
        env_text(
            f"| {here} | builtin | `flock -E 75 -w 9 {tmp_path}/mine/gpu-<id>.lock` |\n"
            f"| * | builtin | `flock -E 75 -w 600 {tmp_path}/any/gpu-<id>.lock` |\n"
        ).replace(f"| {LOGIN} | local | gfx90a | 8 |", f"| {here} | local | gfx90a | 8 |"),
        Path(tmp_path / "env.md"),
    )
    row = select_host(env, RunOptions(env_path=env.path), {"SLURM_JOB_ID": "12"})
    assert (row.arch, row.gpus) == ("gfx90a", 8)
    assert lock_for(env, row)[0].path_template == f"{tmp_path}/mine/gpu-<id>.lock"


def test_a_one_task_array_runs_its_shard_only_where_the_count_is_given():
    # sbatch --array=2: a re-run of task 2 of a 0-3 array; Slurm says only this task
    environ = {
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURM_ARRAY_TASK_COUNT": "1",
        "SLURM_ARRAY_TASK_MIN": "2",
        "SLURM_ARRAY_TASK_MAX": "2",
    }
    with pytest.raises(UsageError) as err:  # it would be shard 0/1 and run every target
        parse_spec("auto", environ)
    text = str(err.value)
    assert "this array has one task (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=1)" in text, text
    assert "--gpu-shard auto/N" in text and "--gpu-shard 2/N" in text and "\n" not in text
    index, count, source = parse_spec("auto/4", environ)
    assert (index, count) == (2, 4) and "one-task array, a re-run: 4 shards from auto/4" in source
    with pytest.raises(UsageError, match="shard 2 of 2 .* is out of range"):
        parse_spec("auto/2", environ)
    assert parse_spec("2/4", environ)[:2] == (2, 4), "an explicit shard needs no array at all"
    whole = dict(environ, SLURM_ARRAY_TASK_COUNT="4", SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_MAX="3")
    assert parse_spec("auto", whole)[:2] == (2, 4) and parse_spec("auto/4", whole)[:2] == (2, 4)
