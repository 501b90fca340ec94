"""A real git repo with a known commit graph, and history runs of its commits: what the history's
commit-order tests read.

The graph (first parent drawn left)::

    c1 - c2 - ... - c8 - c9 - c10 - c11 - c12 - ... - c20     main (c11 merges side)
                     \\               /
                      s1 - s2 - s3 -'                          side
              c5 - o1 - o2 - o3 - o4                            other (never merged)

Tags: v0.9 at c2, v1.0 at c6, nightly-9 at c9, v2.0 at c14.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.history.records import StoredRow, StoredRun, stored_run
from pytest_gpuverify.records.artifact import Artifact, GpuRecord, PerfRow, RepoRecord, TargetRecord, Versions

TAGS = {"v0.9": "c2", "v1.0": "c6", "nightly-9": "c9", "v2.0": "c14"}


@dataclass
class Lab:
    repo: Path
    sha: dict[str, str]  # commit name (c1, s2, o1) -> its full sha

    def short(self, name: str) -> str:
        return self.sha[name][:12]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def make_lab(repo: Path) -> Lab:
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    sha: dict[str, str] = {}

    def commit(name: str) -> None:
        _git(repo, "commit", "-q", "--allow-empty", "-m", name)
        sha[name] = _git(repo, "rev-parse", "HEAD")

    for i in range(1, 11):
        commit(f"c{i}")
        if i == 5:
            _git(repo, "branch", "other")
        if i == 8:
            _git(repo, "branch", "side")
    _git(repo, "checkout", "-q", "side")
    for name in ("s1", "s2", "s3"):
        commit(name)
    _git(repo, "checkout", "-q", "other")
    for name in ("o1", "o2", "o3", "o4"):
        commit(name)
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "c11", "side")
    sha["c11"] = _git(repo, "rev-parse", "HEAD")
    for i in range(12, 21):
        commit(f"c{i}")
    for tag, name in TAGS.items():
        _git(repo, "tag", tag, sha[name])
    return Lab(repo, sha)


def stored(sha: str | None, n: int, values: list[float], ref: str | None = "main", target: str = "t") -> StoredRun:
    """A PASS run of a clean checkout of ``sha`` that ran at second ``n`` (its time order), one row."""
    row = StoredRow(
        shape="M=1",
        name="t",
        metric="us",
        direction="lower",
        values=values,
        median=sorted(values)[len(values) // 2],
        min=min(values),
        max=max(values),
    )
    return StoredRun(
        artifact_sha256=hashlib.sha256(f"{sha}-{n}".encode()).hexdigest(),
        artifact_path=f"/nowhere/{n}.json",
        target=target,
        topic=target,
        facts={"target": f"{target} (bench)"},
        sha=sha,
        ref=ref,
        dirty=False,
        ts=f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        verdict="PASS",
        rows=[row],
    )


def artifact_at(repo: Path, sha: str, times: list[float], ts: str = "2026-02-01T00:00:00Z") -> Artifact:
    """An artifact of a repeated bench target, run i printing ``times[i]`` us, on a clean checkout of ``sha``."""
    rows = [PerfRow(shape="M=128, N=4096", name="us", us_median=t, run=i + 1) for i, t in enumerate(times)]
    gpu = GpuRecord(index=0, arch="gfx942", name="MI300X")
    return Artifact(
        topic="gemm",
        ts=ts,
        verdict="PASS",
        perf=rows,
        target=TargetRecord(name="gemm", kind="bench", regime="warm"),
        repos=[RepoRecord(path=str(repo), sha=sha, dirty=False)],
        command="python3 bench/gemm.py",
        gpu=gpu,
        gpus=[gpu],
        image="rocm/pytorch:7.0",
        container="aiter-dev",
        versions=Versions(torch="2.8.0", hip="7.0", rocm="7.0.1", triton="3.4.0"),
    )


def stored_artifact(art: Artifact, n: int, ref: str | None = "main") -> StoredRun:
    """``art`` as the store keeps it, added as the n-th artifact."""
    return stored_run(art, Path(f"/nowhere/{n}/bench_gemm.json"), hashlib.sha256(f"art-{n}".encode()).hexdigest(), ref)
