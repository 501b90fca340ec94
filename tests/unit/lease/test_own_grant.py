"""Only the allocation's own grant counts: the job's (SLURM_JOB_GPUS), narrowed by a step of that job;
a SLURM_STEP_GPUS inherited from another job's step is refused with one line."""

from __future__ import annotations

import pytest

from pytest_gpuverify.lease.grants import GrantProblem, read_grant


def test_the_jobs_grant_counts_where_no_step_narrows_it():
    record = read_grant({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "1", "ROCR_VISIBLE_DEVICES": "1"}, "rocm", {}, False, 4)
    assert record is not None and (record.read_from, record.granted, record.job_id) == ("SLURM_JOB_GPUS", [1], "7")


def test_a_step_of_the_job_narrows_its_grant():
    record = read_grant(
        {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_JOB_GPUS": "0,1,2", "SLURM_STEP_GPUS": "2"},
        "rocm",
        {},
        False,
        4,
    )
    assert record is not None and (record.read_from, record.granted) == ("SLURM_STEP_GPUS", [2])


def test_an_inherited_step_grant_naming_another_jobs_gpu_is_refused_in_one_line():
    # sbatch --export=ALL from inside job 3's step: job 4 was granted GPU 1, the inherited step names GPU 0
    environ = {
        "SLURM_JOB_ID": "4",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_GPUS": "1",
        "SLURM_STEP_GPUS": "0",
        "ROCR_VISIBLE_DEVICES": "1",
    }
    with pytest.raises(GrantProblem) as err:
        read_grant(environ, "rocm", {}, False, 4)
    text = str(err.value)
    assert "SLURM_STEP_GPUS='0' names GPU(s) 0 that slurm job 4 was not granted (SLURM_JOB_GPUS='1')" in text, text
    assert "Fix:" in text and "\n" not in text


def test_a_step_grant_outside_any_step_is_refused():
    with pytest.raises(GrantProblem) as err:
        read_grant({"SLURM_JOB_ID": "4", "SLURM_STEP_GPUS": "0"}, "rocm", {}, False, 4)
    assert "outside a Slurm step of slurm job 4" in str(err.value) and "Fix:" in str(err.value)
    with pytest.raises(GrantProblem):
        read_grant({"SLURM_STEP_GPUS": "0", "SLURM_STEP_ID": "0"}, "rocm", {}, False, 4)


def test_a_step_of_the_job_alone_stands_as_srun_outside_a_batch_job_sets_it():
    record = read_grant({"SLURM_JOB_ID": "9", "SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "0,1"}, "rocm", {}, False, 4)
    assert record is not None and (record.read_from, record.granted, record.job_id) == ("SLURM_STEP_GPUS", [0, 1], "9")
