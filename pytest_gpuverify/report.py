"""Human-readable lines for the terminal summary and ``gpuverify show``."""

from __future__ import annotations

from typing import Iterable


def verdict_line(artifact, path) -> str:
    gpu = ",".join(str(g.index) for g in artifact.gpus) if artifact.gpus else "-"
    if not artifact.reasons:
        why = "ok"
    else:
        why = artifact.reasons[0][:160] + (f" (+{len(artifact.reasons) - 1} more)" if len(artifact.reasons) > 1 else "")
    return f"{artifact.verdict:<12} {artifact.target.name if artifact.target else artifact.topic}  gpu {gpu}  {why}  -> {path}"


def summary_lines(outcomes: Iterable) -> list[str]:
    lines = [verdict_line(o.artifact, o.artifact_path) for o in outcomes]
    return lines or ["no GPU targets ran"]
