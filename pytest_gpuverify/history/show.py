"""``gpuverify history show TARGET``: per like-work group and perf row, each commit's median, runs and
spread, and the steps found (a regression with its commit range)."""

from __future__ import annotations

from pytest_gpuverify.compare.core import DEFAULT_RULE
from pytest_gpuverify.history.series import TargetHistory

FACTS = ("gpu_model", "gpu_arch", "image", "torch", "rocm", "hip", "triton")


def render(histories: list[TargetHistory]) -> str:
    lines: list[str] = []
    for history in histories:
        facts = ", ".join(f"{k} {history.facts.get(k)}" for k in FACTS if history.facts.get(k))
        refs = ", ".join(history.refs) or "unknown"
        lines.append(f"{history.target}: {history.runs} PASS run(s) on {refs}; {facts}")
        for row in history.rows:
            arrow = {"higher": "higher is better", "lower": "lower is better"}.get(row.direction or "", "direction unknown")
            lines.append(f"  {row.label()} ({arrow})")
            calls = {s.index: s for s in row.steps}
            for i, point in enumerate(row.points):
                step = calls.get(i)
                mark = f"  {step.call} {row.step_range(step)}: {step.why}" if step else ""
                lines.append(f"    {point.short():12}  {point.ts[:19]}  median {point.median:<10.4g} "
                             f"runs {len(point.values):<3} min {min(point.values):.4g} max {max(point.values):.4g}{mark}")
            least = DEFAULT_RULE.least_runs
            if not row.steps:
                lines.append("    no step found" + ("" if len(row.points) >= 2 * least else
                                                    f" (a step needs {least} commits on each side)"))
        lines.append("")
    return "\n".join(lines).rstrip()
