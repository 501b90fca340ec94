"""What the store keeps of one checked artifact (:class:`StoredRun`), the same model in the database
and in an export's JSON lines: its identity facts (compare/identity.py), commit and ref, time,
verdict, the GPUs' watch records, and per perf row the value of each process (each run) with their median
and spread."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.command import own_watch
from pytest_gpuverify.compare.core import own_rows
from pytest_gpuverify.compare.identity import identity
from pytest_gpuverify.history.health import GpuRun, gpu_runs_of
from pytest_gpuverify.parsers.figures import RowKey, direction_of, process_values
from pytest_gpuverify.records.artifact import Artifact, GpuWatch, Verdict
from pytest_gpuverify.records.machine import held, joined

__all__ = ["RowKey", "StoredRow", "StoredRun", "commit_of", "stored_run"]


class StoredRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: str | None = None
    shape: str
    name: str
    stat: str | None = None
    metric: str
    direction: str | None = None  # "higher"/"lower": which way is better; None: unknown
    # one per process (a repeated run, or the artifact's one process): the median of what it printed for
    # the row, as compare counts runs (parsers/figures.process_values)
    values: list[float] = Field(min_length=1)
    median: float
    min: float
    max: float
    cv: float | None = None

    @property
    def key(self) -> RowKey:
        return (self.table, self.shape, self.name, self.stat, self.metric)


class StoredRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    artifact_path: str
    target: str | None = None
    topic: str
    ticket: str | None = None
    host: str | None = None
    facts: dict[str, str | None]  # compare/identity.py's facts (like work has the same), and the GPUs' firmware
    image_digest: str | None = None
    sha: str | None = None
    ref: str | None = None
    dirty: bool | None = None
    ts: str
    verdict: Verdict
    watch: list[GpuWatch] = Field(default_factory=list)
    rows: list[StoredRow] = Field(default_factory=list)
    # who sent it, where the ingest service stored it (None for a run added on the host itself)
    signer: str | None = None
    ci_run_url: str | None = None
    runner: str | None = None
    uploaded: str | None = None
    # what the run did to each GPU it held (the machines' health); read back for an export, not for trends
    gpus: list[GpuRun] = Field(default_factory=list)

    def label(self) -> str:
        return self.target or self.topic


def commit_of(art: Artifact) -> tuple[str | None, bool | None]:
    """The commit the artifact's own runs stood on (an A/B artifact's head: the checkout the session
    started from, its repo record) and whether it was dirty; None where the record does not say."""
    if art.ab is not None and art.ab.head_sha:
        head = next((r for r in art.repos if r.sha == art.ab.head_sha), None)
        return art.ab.head_sha, head.dirty if head is not None else None
    repo = next((r for r in art.repos if r.sha), None)
    return (repo.sha, repo.dirty) if repo else (None, None)


def firmware_of(art: Artifact) -> str | None:
    """The VBIOS (firmware) of the GPUs the run held, as the machine record read it: a trend notes its changes."""
    if art.machine is None:
        return None
    return joined(g.vbios for g in held(art.machine, [g.index for g in art.gpus]))


def stored_run(art: Artifact, path: Path, sha256: str, ref: str | None) -> StoredRun:
    sha, dirty = commit_of(art)
    directions = art.target.directions if art.target else {}
    rows = []
    for (table, shape, name, stat, metric), by_process in process_values(own_rows(art)).items():
        values = [stats.median(printed) for printed in by_process.values()]
        rows.append(
            StoredRow(
                table=table,
                shape=shape,
                name=name,
                stat=stat,
                metric=metric,
                direction=direction_of(metric, name, directions),
                values=values,
                median=stats.median(values),
                min=min(values),
                max=max(values),
                cv=stats.cv(values),
            )
        )
    return StoredRun(
        artifact_sha256=sha256,
        artifact_path=str(path),
        target=art.target.name if art.target else None,
        topic=art.topic,
        ticket=art.key,
        host=art.host,
        facts={**identity(art), "firmware": firmware_of(art)},
        image_digest=art.image_digest,
        sha=sha,
        ref=ref,
        dirty=dirty,
        ts=art.ts,
        verdict=art.verdict,
        watch=own_watch(art, None),
        rows=rows,
        gpus=gpu_runs_of(art),
    )
