"""Artifacts of a repeated target built in-process, for the tests of `gpuverify compare`'s rule."""

from __future__ import annotations

from pytest_gpuverify.records.artifact import Artifact, GpuRecord, PerfRow, RepoRecord, TargetRecord, Versions


def artifact(
    times: list[float],
    *,
    side: str | None = None,
    verdict: str = "PASS",
    reasons=(),
    metrics=None,
    table: str | None = None,
    checkout: str = "/home/dev/aiter",
    watch=(),
    **facts,
) -> Artifact:
    """One artifact of a repeated target: run i printed ``times[i]`` (and ``metrics`` per run)."""
    rows = [
        PerfRow(
            shape="M=128, N=4096",
            name="us",
            us_median=t,
            run=i + 1,
            side=side,
            table=table,
            metrics={k: v[i] for k, v in (metrics or {}).items()},
        )
        for i, t in enumerate(times)
    ]
    base = dict(
        topic="gemm",
        ts="now",
        verdict=verdict,
        reasons=list(reasons),
        perf=rows,
        target=TargetRecord(name="gemm", kind="bench", regime="warm"),
        repos=[RepoRecord(path=checkout)],
        command=f"python3 {checkout}/bench/gemm.py 100",
        gpu=GpuRecord(index=0, arch="gfx942", name="MI300X"),
        gpus=[GpuRecord(index=0, arch="gfx942", name="MI300X")],
        image="rocm/pytorch:7.0",
        versions=Versions(torch="2.8.0", hip="7.0", rocm="7.0.1", triton="3.4.0"),
        container="aiter-dev",
        watch=list(watch),
    )
    return Artifact(**{**base, **facts})
