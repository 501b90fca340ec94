"""The artifact's ``perf_summary``: each printed quantity over a target's repeated runs, per side,
as the median of the runs, their min and max. Derived from ``perf`` alone, so ``gpuverify check``
re-derives it and names any difference."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_gpuverify.common.stats import median
from pytest_gpuverify.parsers.figures import row_values
from pytest_gpuverify.records.artifact import Artifact, PerfRow, PerfSummary


def summarize(rows: Iterable[PerfRow]) -> list[PerfSummary]:
    """Only rows that carry a ``run`` (repeated runs) are summarized; in first-seen order."""
    found: dict[tuple, list[float]] = {}
    for row in rows:
        if row.run is None:
            continue
        for metric, value in row_values(row):
            found.setdefault((row.shape, row.name, row.stat, row.side, metric), []).append(value)
    return [
        PerfSummary(
            shape=shape,
            name=name,
            stat=stat,
            side=side,
            metric=metric,
            runs=len(values),
            median=median(values),
            min=min(values),
            max=max(values),
        )
        for (shape, name, stat, side, metric), values in found.items()
    ]


def summary_problems(art: Artifact) -> list[str]:
    """Differences between the artifact's ``perf_summary`` and the one its ``perf`` gives."""
    ours = [s.model_dump() for s in summarize(art.perf)]
    theirs = [s.model_dump() for s in art.perf_summary]
    if ours == theirs:
        return []
    if len(ours) != len(theirs):
        return [f"perf_summary has {len(theirs)} entries, the perf rows give {len(ours)}"]
    for i, (a, b) in enumerate(zip(theirs, ours)):
        for key in a:
            if a[key] != b[key]:
                return [
                    f"perf_summary[{i}] ({b['shape']} {b['name']} {b['metric']}): {key} is {a[key]!r}, "
                    f"the perf rows give {b[key]!r}"
                ]
    return ["perf_summary differs from what the perf rows give"]
