"""``gpuverify history show TARGET``: per like-work group and perf row, the newest commits' medians, runs
and spread (every commit with ``--all``), and every step found, a regression with its commit range:
a step older than the commits shown gets a line of its own above them."""

from __future__ import annotations

from pytest_gpuverify.compare.core import DEFAULT_RULE
from pytest_gpuverify.history.series import Point, RowHistory, TargetHistory

FACTS = ("gpu_model", "gpu_arch", "image", "torch", "rocm", "hip", "triton")
NEWEST = 20  # commits shown per row unless --all


def render(histories: list[TargetHistory], newest: int | None = None, partial: bool = False) -> str:
    """``newest``: the commits shown per row (None: all); ``partial``: the rows hold only the newest commits
    the store was asked for, so how many older ones there are is not known here."""
    lines: list[str] = []
    for history in histories:
        facts = ", ".join(f"{k} {history.facts.get(k)}" for k in FACTS if history.facts.get(k))
        facts += f", runner {history.runner}" if history.runner else ""
        refs = ", ".join(history.refs) or "unknown"
        lines.append(f"{history.target}: {history.runs} PASS run(s) on {refs}; {facts}")
        for row in history.rows:
            lines += _row(row, newest, partial)
        lines.append("")
    return "\n".join(lines).rstrip()


def _row(row: RowHistory, newest: int | None, partial: bool) -> list[str]:
    arrow = {"higher": "higher is better", "lower": "lower is better"}.get(row.direction or "", "direction unknown")
    lines = [f"  {row.label()} ({arrow})"]
    first = 0 if newest is None else max(0, len(row.points) - newest)
    if first:
        older = "older commits" if partial else f"{first} older commit(s)"
        lines.append(f"    ... {older} not shown (--all shows every commit)")
    for step in row.steps:
        if step.index < first:  # its commits are not shown: the step on a line of its own
            lines.append(
                f"    {step.call} {row.step_range(step)}: {step.why} (median {step.before:.4g} to {step.after:.4g})"
            )
    calls = {s.index: s for s in row.steps}
    for i in range(first, len(row.points)):
        at = calls.get(i)
        mark = f"  {at.call} {row.step_range(at)}: {at.why}" if at else ""
        lines.append(_point(row.points[i]) + mark)
    least = DEFAULT_RULE.least_runs
    if not row.steps:
        lines.append(
            "    no step found"
            + ("" if len(row.points) >= 2 * least else f" (a step needs {least} commits on each side)")
        )
    return lines


def _point(point: Point) -> str:
    return (
        f"    {point.short():12}  {point.ts[:19]}  median {point.median:<10.4g} "
        f"runs {len(point.values):<3} min {min(point.values):.4g} max {max(point.values):.4g}"
    )
