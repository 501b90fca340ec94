"""The outputs of ``gpuverify compare``: a table, ``--json``, ``--markdown``; each with the header
(which checkout is which side, the facts allowed to differ, notes such as unrecorded clocks)."""

from __future__ import annotations

import json

from pytest_gpuverify.common import markdown as md
from pytest_gpuverify.compare.core import Comparison, Pair, Summary
from pytest_gpuverify.config.vocabulary import HIGHER

HEAD = ("table", "shape", "name", "metric", "base", "head", "ratio", "call", "why")


def header(result: Comparison) -> list[str]:
    lines = []
    ab = result.ab
    if ab is not None:
        lines.append(
            f"A (base) = {ab.base_ref} {(ab.base_sha or '?')[:12]}, B (head) = {(ab.head_sha or '?')[:12]}; "
            f"run order {' '.join(ab.order)}"
        )
    rule = result.rule
    tested = sum(p.q is not None for p in result.pairs)
    low, high = rule.margin
    lines.append(
        f"rule: Welch's t on the runs' logs, {rule.least_runs}+ runs per side; a call needs q < {rule.fdr:g} "
        f"(Benjamini-Hochberg over the {tested} row(s) tested) and the ratio beyond the factor {rule.factor:g}; "
        f"SAME needs the {rule.level} interval inside [{low:.3f}, {high:g}]"
        + (f"; {rule.spread:g} x CV" if rule.spread else "")
        + f"; noisy above CV {rule.noisy_cv:.0%}"
    )
    lines += [f"allowed to differ: {d.describe()}" for d in result.allowed]
    lines += [f"note: {n}" for n in result.notes]
    return lines


def _side(mean: float | None, runs: list[float], cv: float | None) -> str:
    if mean is None:
        return "-" if not runs else f"(n={len(runs)})"
    return f"{mean:.4g} (n={len(runs)}" + (f", cv {cv:.1%})" if cv is not None else ")")


def _cells(p: Pair) -> tuple[str, ...]:
    metric = p.metric if p.stat in (None, "median") or p.metric != "us" else f"{p.stat} us"
    arrow = {None: " ?", HIGHER: " ↑"}.get(p.direction, " ↓")
    ratio = (
        "-"
        if p.ratio is None
        else f"{p.ratio:.3f}"
        + (f" [{p.ci_low:.3f}, {p.ci_high:.3f}]" if p.ci_low is not None and p.ci_high is not None else "")
    )
    return (
        p.table or "",
        p.shape,
        p.name,
        metric + arrow,
        _side(p.base_mean, p.base, p.base_cv),
        _side(p.head_mean, p.head, p.head_cv),
        ratio,
        p.call,
        p.why,
    )


def _columns(pairs: list[Pair]) -> list[int]:
    """The columns to show: the table title only where some row has one."""
    return [i for i in range(len(HEAD)) if i or any(p.table for p in pairs)]


def table(result: Comparison) -> str:
    cols = _columns(result.pairs)
    rows = [[HEAD[i] for i in cols]] + [[_cells(p)[i] for i in cols] for p in result.pairs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols) - 1)]
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    lines = header(result)
    summary = [summary_line(s, result.rule.level) for s in result.summary]
    return "\n".join(lines + ([""] if lines else []) + body + ([""] if summary else []) + summary)


def summary_line(s: Summary, level: str) -> str:
    """``geomean gain over 3 rows (us): 1.200 [1.187, 1.213]``: head better above 1."""
    scope = f"of {s.table} " if s.table else ""
    interval = (
        f" [{s.ci_low:.3f}, {s.ci_high:.3f}] ({level})"
        if s.ci_low is not None and s.ci_high is not None
        else f" (no interval: {s.why_no_interval})"
    )
    return (
        f"geomean gain {scope}over {s.rows} row(s) ({', '.join(s.figures)}): {s.gain:.3f}{interval}; "
        "above 1: the head is better"
    )


def markdown(result: Comparison) -> str:
    cols = _columns(result.pairs)
    lines = [f"- {md.text(line)}" for line in header(result)]
    lines += ([""] if lines else []) + ["| " + " | ".join(HEAD[i] for i in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(md.text(_cells(p)[i]) for i in cols) + " |" for p in result.pairs]
    summary = [f"- {md.text(summary_line(s, result.rule.level))}" for s in result.summary]
    return "\n".join(lines + ([""] if summary else []) + summary)


def as_json(result: Comparison) -> str:
    rule = result.rule
    doc = {
        "factor": rule.factor,
        "rule": {
            "test": "welch-t-on-logs",
            "fdr": rule.fdr,
            "fdr_method": "benjamini-hochberg",
            "confidence": rule.confidence,
            "margin": list(rule.margin),
            "spread": rule.spread,
            "noisy_cv": rule.noisy_cv,
            "least_runs": rule.least_runs,
            "tested": sum(p.q is not None for p in result.pairs),
        },
        "allowed_differences": [d.as_dict() for d in result.allowed],
        "notes": result.notes,
        **({"ab": result.ab.model_dump()} if result.ab else {}),
        "target": result.target,
        "artifacts": result.artifacts,
        "commits": result.commits,
        "pairs": [p.as_dict() for p in result.pairs],
        "summary": [s.as_dict() for s in result.summary],
    }
    return json.dumps(doc, indent=2)
