"""A target's trend series are partitioned by the machine (history/series.py): like work on the same kind of GPU
and the same runner label is one series; a driver or firmware update splits it into stretches, and a step at
that point names the change instead of a commit range."""

from __future__ import annotations

from pathlib import Path

from store_artifacts import held_gpu

from pytest_gpuverify.compare.core import REGRESSED
from pytest_gpuverify.history.records import stored_run
from pytest_gpuverify.history.series import target_histories
from pytest_gpuverify.records.artifact import PerfRow, RepoRecord

OLD, NEW = "amdgpu 6.12.12", "amdgpu 6.14.4"


def sha(n: int) -> str:
    return f"{n:02d}" + "c" * 38


def run(n: int, us: float, driver: str = OLD, runner: str | None = None, arch: str = "gfx942", vbios=None):
    art = held_gpu(n, driver=driver)
    art.machine.gpus[0].vbios = vbios  # type: ignore[union-attr]
    art.perf = [PerfRow(shape="M=16", name="ck", us_median=us + 0.02 * (n % 3))]
    art.repos = [RepoRecord(path="/r", sha=sha(n), dirty=False)]
    art.gpus[0].arch = art.gpu.arch = arch
    stored = stored_run(art, Path(f"/t/{n}/bench_w.json"), f"{n:064x}", "main")
    return stored.model_copy(update={"runner": runner})


def test_a_step_at_a_driver_update_names_the_driver_not_a_commit():
    runs = [run(n, 10.0) for n in range(1, 9)] + [run(n, 12.0, driver=NEW) for n in range(9, 17)]
    (history,) = target_histories(runs)
    (row,) = history.rows
    (step,) = row.steps
    assert (step.index, step.call) == (8, REGRESSED)
    assert step.cause == f"the driver changed from {OLD} to {NEW} at this point"
    text = row.step_range(step)
    assert text.startswith(
        f"the driver changed from {OLD} to {NEW} at this point (after {sha(8)[:12]}, at {sha(9)[:12]}"
    )
    assert "not a commit's doing" in text and ".." not in text


def test_a_commit_s_step_on_one_driver_keeps_its_commit_range_and_none_is_blamed_across_a_flat_update():
    runs = [run(n, 10.0) for n in range(1, 7)] + [run(n, 12.0) for n in range(7, 13)]
    runs += [run(n, 12.0, driver=NEW) for n in range(13, 19)]  # the update changed nothing
    (history,) = target_histories(runs)
    (row,) = history.rows
    (step,) = row.steps
    assert (step.index, step.call, step.cause) == (6, REGRESSED, None)
    # a commit is named (no graph here: the two commits, in run order)
    assert row.step_range(step).startswith(f"after {sha(6)[:12]}, at {sha(7)[:12]} (no commit range: ordered by run")


def test_series_are_split_by_runner_label_and_gpu_arch_but_not_by_driver():
    runs = [run(1, 10.0, runner="mi300-a"), run(2, 10.0, runner="mi300-b"), run(3, 10.0, runner="mi300-a", driver=NEW)]
    runs += [run(4, 10.0, runner="mi300-a", arch="gfx950")]
    groups = target_histories(runs)
    assert sorted(g.runs for g in groups) == [1, 1, 2]
    (two,) = [g for g in groups if g.runs == 2]
    assert [p.machine for p in two.rows[0].points] == [(OLD, None), (NEW, None)] and two.runner == "mi300-a"


def test_a_step_at_new_firmware_names_it():
    runs = [run(n, 10.0, vbios="113-M3000100-102") for n in range(1, 9)]
    runs += [run(n, 8.0, vbios="113-M3000100-105") for n in range(9, 17)]
    (history,) = target_histories(runs)
    (step,) = history.rows[0].steps
    assert step.cause == "the GPU firmware (VBIOS) changed from 113-M3000100-102 to 113-M3000100-105 at this point"
    assert step.call == "IMPROVED"
