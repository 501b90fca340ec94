"""An A/B target in the report: its sides named by what they ran (``base main``, ``head 1a2b3c4d``), the
geometric mean of the gain with its interval, and one row per compared figure (base and head side by
side, the ratio's interval, the call), regressions first, each row an anchor the summary links to."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from pytest_gpuverify.compare.core import IMPROVED, INCONCLUSIVE, REGRESSED, SAME, Pair, Summary, compare, side_of
from pytest_gpuverify.compare.render import summary_line
from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.reporting.axis import number

CALL_ORDER = {REGRESSED: 0, INCONCLUSIVE: 1, IMPROVED: 2, SAME: 3}


@dataclass
class AbView:
    pairs: list[Pair]  # regressions first
    summary: Summary | None
    level: str  # the interval's confidence, e.g. "95%"

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.pairs:
            out[p.call] = out.get(p.call, 0) + 1
        return dict(sorted(out.items(), key=lambda c: CALL_ORDER.get(c[0], 9)))


def side_names(art: Artifact) -> dict[str, str]:
    """The name each side's series is drawn under: what it ran, never a bare ``A`` or ``B``."""
    sides = {r.side for r in art.perf if r.side}
    if not sides:
        return {}
    base = f"base {art.ab.base_ref}" if art.ab else "base"
    head = f"head {art.ab.head_sha[:10]}" if art.ab and art.ab.head_sha else "head"
    return {s: base if side_of(s) == "base" else head if side_of(s) == "head" else s for s in sides}


def ab_view(art: Artifact) -> AbView | None:
    """The compare of an A/B artifact's two sides (the rule ``gpuverify compare`` uses), or None."""
    if not {side_of(r.side) for r in art.perf} >= {"base", "head"}:
        return None
    from pytest_gpuverify.compare.core import DEFAULT_RULE, summaries

    pairs = compare(art)
    found = summaries(pairs, DEFAULT_RULE)
    pairs.sort(key=lambda p: (CALL_ORDER.get(p.call, 9), -abs((p.ratio or 1.0) - 1.0)))
    return AbView(pairs, found[0] if found else None, DEFAULT_RULE.level)


def pair_anchor(target: int, k: int) -> str:
    return f"t{target}-p{k}"


def gain_line(view: AbView) -> str:
    return summary_line(view.summary, view.level) if view.summary else "no row measured on both sides"


def _num(v: float | None) -> str:
    return "-" if v is None else number(v, 4)


def _side(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{_num(ordered[len(ordered) // 2])} [{_num(ordered[0])}, {_num(ordered[-1])}]"


def pairs_table(target: int, view: AbView, names: dict[str, str]) -> str:
    """Base and head side by side (median [min, max] of the runs), head/base with its interval, the call."""
    base = next((n for s, n in names.items() if side_of(s) == "base"), "base")
    head = next((n for s, n in names.items() if side_of(s) == "head"), "head")
    head_cells = ["call", "shape", "name", "figure", f"{base}: median [min, max]", f"{head}: median [min, max]"]
    head_cells += [f"head/base [{view.level} interval]", "why"]
    rows = []
    for k, p in enumerate(view.pairs):
        interval = f" [{p.ci_low:.3f}, {p.ci_high:.3f}]" if p.ci_low is not None and p.ci_high is not None else ""
        shape = f"{p.table} {p.shape}" if p.table else p.shape
        cells = [shape, p.name, p.metric, _side(p.base), _side(p.head), f"{_num(p.ratio)}{interval}", p.why]
        rows.append(
            f'<tr id="{pair_anchor(target, k)}"><td class="{p.call.replace(" ", "_")}">{escape(p.call)}</td>'
            + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + "</tr>"
        )
    return table_html(f"t{target}-pairs", head_cells, rows, scroll=True)


def regressions_list(target: int, label: str, view: AbView) -> str:
    """The summary's lines of one A/B target: its gain, then each regression, a link to its row."""
    items = "".join(
        f'<li><a href="#{pair_anchor(target, k)}">REGRESSED {escape(p.shape)} {escape(p.name)} '
        f"{escape(p.metric)}: {_num(p.ratio)}x</a></li>"
        for k, p in enumerate(view.pairs)
        if p.call == REGRESSED
    )
    counts = ", ".join(f'<span class="{c.replace(" ", "_")}">{n} {escape(c)}</span>' for c, n in view.counts().items())
    return (
        f'<li><a href="#t{target}">{escape(label)}</a>: {escape(gain_line(view))}. {counts}'
        + (f'<ul class="regressions">{items}</ul>' if items else "")
        + "</li>"
    )


def table_html(ident: str, head: list[str], rows: list[str], scroll: bool = False, count: int | None = None) -> str:
    """A table that sorts (click a heading) and filters (the box above it) with the page's own script;
    ``scroll``: in a box of its own height, so what follows it stays in sight; ``count``: the rows it will
    hold where they are built when it opens."""
    box = (
        f'<div><input class="filter" data-table="{ident}" placeholder="filter rows" aria-label="filter rows"> '
        f'<span class="count" id="{ident}-count">{len(rows) if count is None else count} rows</span></div>'
    )
    table = (
        f'<table class="sortable" id="{ident}"><thead><tr>'
        + "".join(f"<th>{escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    return box + (f'<div class="scroll">{table}</div>' if scroll else table)
