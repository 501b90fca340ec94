"""The outputs of ``gpuverify compare``: a table, ``--json``, ``--markdown``."""

from __future__ import annotations

import json
from typing import Optional

from pytest_gpuverify.compare.core import Pair

HEAD = ("shape", "name", "metric", "base", "head", "ratio", "call", "why")


def _cells(p: Pair) -> tuple[str, ...]:
    def fmt(v, runs):
        return "-" if v is None else f"{v:.4g} (n={len(runs)})"

    metric = p.metric if p.stat in (None, "median") or p.metric != "us" else f"{p.stat} us"
    arrow = " ↑" if p.higher_is_better else " ↓"
    ratio = "-" if p.ratio is None else f"{p.ratio:.3f}"
    return (p.shape, p.name, metric + arrow, fmt(p.base_median, p.base), fmt(p.head_median, p.head),
            ratio, p.call, p.why)


def table(pairs: list[Pair]) -> str:
    rows = [HEAD] + [_cells(p) for p in pairs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def markdown(pairs: list[Pair]) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(p)) + " |" for p in pairs]
    return "\n".join(lines)


def as_json(pairs: list[Pair], factor: float, ab: Optional[dict] = None) -> str:
    head = {"factor": factor, **({"ab": ab} if ab else {})}
    return json.dumps({**head, "pairs": [p.as_dict() for p in pairs]}, indent=2)
