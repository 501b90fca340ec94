"""What a build and a fresh container were, as the artifact records them (``builds[]``,
``fresh_container``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FAILED = "build failed: "


FAILED_BASE = "build failed on the base side: "  # a build of --gpu-ab's base worktree (side A)


def failed_prefix(reason: str) -> str:
    """The prefix of a build failure's reason ('' when it is not one)."""
    return next((p for p in (FAILED_BASE, FAILED) if reason.startswith(p)), "")


class BuildRecord(BaseModel):
    """One build as it ran (the artifact's ``builds[]``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    command: str
    gpu: bool = False
    gpus: list[int] = Field(default_factory=list)  # the GPUs it saw (gpu = true)
    container: str | None = None
    workdir: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    problem: str | None = None  # why it did not run or did not finish
    output: str | None = None  # file name, beside the artifact
    output_sha256: str | None = None
    output_bytes: int | None = None
    duration_s: float | None = None
    side: str | None = None  # --gpu-ab: "A" built the base worktree, "B" the head's; None without A/B
    # a gpu = true build's hold of a GPU lock it took for itself (ISO 8601 UTC), for exclusivity.py;
    # null when it ran under the run's own lock, which the artifact's timeline already spans
    lock_taken: str | None = None
    lock_released: str | None = None

    @property
    def failed(self) -> str | None:
        """The target's reason when this build failed, else None."""
        prefix = FAILED_BASE if self.side == "A" else FAILED
        if self.problem:
            return f"{prefix}{self.command}: {self.problem}"
        if self.timed_out:
            return f"{prefix}{self.command} timed out"
        if self.exit_code != 0:
            return f"{prefix}{self.command} exited {self.exit_code}"
        return None


def build_failure(records: list[BuildRecord]) -> str | None:
    return next((r.failed for r in records if r.failed), None)


class FreshContainerRecord(BaseModel):
    """The artifact's ``fresh_container``: what was started for the run, and that it was removed."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    row: str  # the Containers row (`run` or `run:<label>`)
    name: str
    id: str | None = None
    image: str
    image_id: str | None = None  # sha256 of the image's config, as the engine has it
    repo_digests: list[str] = Field(default_factory=list)  # registry digests of that image, when pulled
    devices: list[str] = Field(default_factory=list)  # device files passed (host path = container path)
    devices_missing: list[str] = Field(default_factory=list)  # wanted, not on this host: not passed
    mounts: list[str] = Field(default_factory=list)  # "host:container:mode"
    visible: str | None = None  # the visible-devices value inside, when it differs from the host's indices
    removed: bool = False
