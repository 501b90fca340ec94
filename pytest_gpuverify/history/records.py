"""What the store keeps of one checked artifact (:class:`StoredRun`), the same model in the database
and in an export's JSON lines: its identity facts (compare/identity.py), commit and ref, time,
verdict, the GPUs' watch records, and per perf row the value of each run with their median and spread."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.command import own_watch
from pytest_gpuverify.compare.core import own_rows, pairs_of
from pytest_gpuverify.compare.identity import identity
from pytest_gpuverify.records.artifact import Artifact, GpuWatch, Verdict

RowKey = tuple[Optional[str], str, str, Optional[str], str]  # table, shape, name, stat, metric: compare's key


class StoredRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: Optional[str] = None
    shape: str
    name: str
    stat: Optional[str] = None
    metric: str
    direction: Optional[str] = None  # "higher"/"lower": which way is better; None: unknown
    values: list[float] = Field(min_length=1)  # one per run: the median of what the run printed for the row
    median: float
    min: float
    max: float
    cv: Optional[float] = None

    @property
    def key(self) -> RowKey:
        return (self.table, self.shape, self.name, self.stat, self.metric)


class StoredRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    artifact_path: str
    target: Optional[str] = None
    topic: str
    ticket: Optional[str] = None
    host: Optional[str] = None
    facts: dict[str, Optional[str]]  # compare/identity.py's facts: like work has the same
    image_digest: Optional[str] = None
    sha: Optional[str] = None
    ref: Optional[str] = None
    dirty: Optional[bool] = None
    ts: str
    verdict: Verdict
    watch: list[GpuWatch] = Field(default_factory=list)
    rows: list[StoredRow] = Field(default_factory=list)

    def label(self) -> str:
        return self.target or self.topic


def commit_of(art: Artifact) -> tuple[Optional[str], Optional[bool]]:
    """The commit the artifact's own runs stood on (an A/B artifact's head) and whether it was dirty."""
    if art.ab is not None and art.ab.head_sha:
        return art.ab.head_sha, None
    repo = next((r for r in art.repos if r.sha), None)
    return (repo.sha, repo.dirty) if repo else (None, None)


def stored_run(art: Artifact, path: Path, sha256: str, ref: Optional[str]) -> StoredRun:
    sha, dirty = commit_of(art)
    directions = art.target.directions if art.target else {}
    rows = []
    for pair in pairs_of({"head": own_rows(art)}, directions):
        if pair.head:
            rows.append(StoredRow(table=pair.table, shape=pair.shape, name=pair.name, stat=pair.stat,
                                  metric=pair.metric, direction=pair.direction, values=pair.head,
                                  median=stats.median(pair.head), min=min(pair.head), max=max(pair.head),
                                  cv=stats.cv(pair.head)))
    return StoredRun(artifact_sha256=sha256, artifact_path=str(path), target=art.target.name if art.target else None,
                     topic=art.topic, ticket=art.key, host=art.host, facts=identity(art), image_digest=art.image_digest,
                     sha=sha, ref=ref, dirty=dirty, ts=art.ts, verdict=art.verdict,
                     watch=own_watch(art, None), rows=rows)
