"""Where a target ran when a scheduler or CI split the work: its shard of a split run, and the GPUs
granted outside the plugin."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ShardRecord(BaseModel):
    """The artifact's ``shard``: which part of a split run the target ran in."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    index: int  # 0 .. count-1
    count: int
    read_from: str  # "--gpu-shard 1/4", "SLURM_ARRAY_TASK_ID=3 ...", "BUILDKITE_PARALLEL_JOB=1 ..."
    run: str | None = None  # the run every shard shares (--gpu-shard-run, else the CI's run id)
    run_from: str | None = None  # where ``run`` was read
    attempt: int | None = (
        None  # the CI's attempt of the run (GITHUB_RUN_ATTEMPT): a re-run shard replaces its earlier attempts
    )
    plan: str  # a digest of the target set and the count: the shards of one split share it
    sizes: list[int] = Field(default_factory=list)  # GPU targets per shard, every shard's: an empty one is expected
    session: str  # this session's id: one shard run twice shows two
    durations: str | None = None  # the durations file the split was balanced with


class SchedulerRecord(BaseModel):
    """The artifact's ``scheduler``: GPUs granted outside the plugin, and who granted them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: str  # slurm, buildkite, github-actions, gitlab-ci, kubernetes, environment
    job_id: str | None = None
    read_from: str  # the variable the grant was read from
    granted: list[int] = Field(default_factory=list)  # the node's GPU indices, in the grant's order
    variables: dict[str, str] = Field(default_factory=dict)  # every grant variable this process had
    # the inherited variable the command's visibility counts within (a ROCm command on the host)
    renumbered_by: str | None = None
