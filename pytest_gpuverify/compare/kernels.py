"""The kernels behind each row (the artifacts' ``kernels[]``, from a --gpu-trace run): rows whose kernels
ran the same code objects on both sides are SAME by construction, whatever the timings say; rows whose
dispatched kernels differ (another kernel, grid or binary: a fallback, a cached autotune configuration)
are named, since their difference in speed may be that."""

from __future__ import annotations

from pytest_gpuverify.records.artifact import Artifact

SHOWN = 6  # rows named in one note


def _by_row(art: Artifact) -> dict[str, set[tuple]]:
    rows: dict[str, set[tuple]] = {}
    for k in art.kernels:
        for row in k.rows:
            rows.setdefault(row, set()).add((k.name, tuple(k.grid), tuple(k.code_objects)))
    return rows


def _said(kernels: set[tuple]) -> str:
    return ", ".join(
        f"{name} grid {'x'.join(map(str, grid))}" + (f" ({'/'.join(c[:12] for c in codes)})" if codes else "")
        for name, grid, codes in sorted(kernels)
    )


def kernel_notes(base: Artifact, head: Artifact | None) -> list[str]:
    """Two artifacts' rows by their kernels; none for one A/B artifact (its trace is the head's alone)."""
    if head is None:
        return []
    ours, theirs = _by_row(base), _by_row(head)
    same, differ = [], []
    for row in [r for r in ours if r in theirs]:
        if ours[row] == theirs[row]:
            if all(codes for _, _, codes in ours[row]):
                same.append(row)
        else:
            differ.append(f"{row}: the base ran {_said(ours[row])}, the head {_said(theirs[row])}")
    notes = []
    if same:
        more = f" and {len(same) - SHOWN} more" if len(same) > SHOWN else ""
        notes.append(
            f"same binaries: SAME by construction: {'; '.join(same[:SHOWN])}{more} "
            "(their kernels ran byte-identical code objects on both sides)"
        )
    notes += [f"dispatched kernels differ: {d}" for d in differ[:SHOWN]]
    if len(differ) > SHOWN:
        notes.append(f"dispatched kernels differ in {len(differ) - SHOWN} more rows")
    return notes
