"""Human-readable lines for the terminal summary."""

from __future__ import annotations

from typing import Iterable


def summarize_reasons(reasons: list[str]) -> str:
    if not reasons:
        return "ok"
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return reasons[0][:160] + more


def summary_lines(verdicts: Iterable[tuple[str, dict]]) -> list[str]:
    """One line per target: verdict, GPU(s), first reason, artifact path."""
    lines = [
        f"{p['gpuverify_verdict']:<12} {nodeid}  gpu {p.get('gpuverify_gpus', '-')}  "
        f"{p.get('gpuverify_reason', '')}  -> {p.get('gpuverify_artifact', '')}"
        for nodeid, p in verdicts
    ]
    return lines or ["no GPU targets ran"]
