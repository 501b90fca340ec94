"""Small SVG plots, written directly (no plotting library): per shape each printed figure (times and
throughputs alike, one plot per unit), A/B sides, the spread of repeats."""

from __future__ import annotations

import textwrap
from html import escape

from pytest_gpuverify.parsers.figures import row_values, unit_of

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


LABEL_CHARS = 64  # a shape label longer than this wraps onto more lines; it is never cut


def _label_lines(shape: str) -> list[str]:
    return textwrap.wrap(shape, LABEL_CHARS, break_on_hyphens=False) or [""]


def shape_plot(
    series: dict[str, dict[str, list[float]]],
    unit: str = "us",
    width: int = 1000,
    row_height: int = 22,
    spread: dict | None = None,
    mark: str = "",
) -> str:
    """``series``: side (or "") -> shape -> the values (one per run). One row per shape; each side's
    points in its colour, its median as a tick, its min..max as a line (the spread of repeats, widened
    by ``spread[(side, shape)] = (lo, hi)``: the min/max a bench printed). The value axis names
    ``unit``, the other one the shapes (labels wrapped, never cut); ``mark`` is written over the plot
    (a target with no result)."""
    spread = spread or {}
    shapes = list(dict.fromkeys(s for side in series.values() for s in side))
    values = [v for side in series.values() for vs in side.values() for v in vs if v is not None]
    values += [hi for _, hi in spread.values()]
    if not shapes or not values:
        return ""
    top = max(values) * 1.08 or 1.0
    label_w, pad = 420, 10
    plot_w = width - label_w - pad * 2
    lines = {s: _label_lines(s) for s in shapes}
    tops, y = {}, 20.0
    for s in shapes:
        tops[s] = y
        y += row_height + 12 * (len(lines[s]) - 1)
    height = int(y) + 26
    x = lambda v: label_w + plot_w * (v / top)  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">'
    ]
    for i in range(5):
        tick = top * i / 4
        parts.append(f'<line x1="{x(tick):.1f}" y1="14" x2="{x(tick):.1f}" y2="{height - 26}" stroke="#ddd"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 12}" text-anchor="middle">{tick:.3g}</text>')
    parts.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{height - 1}" text-anchor="middle">{escape(unit)}</text>')
    parts.append('<text x="4" y="10">shape</text>')
    if mark:
        parts.append(
            f'<text x="{label_w + plot_w / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" font-size="22" '
            f'fill="#b00020" opacity="0.35">{escape(mark)}</text>'
        )
    sides = list(series)
    for shape in shapes:
        y0 = tops[shape]
        parts.append(
            f'<text x="{label_w - 6}" y="{y0 + 4}" text-anchor="end">'
            + "".join(
                f'<tspan x="{label_w - 6}" dy="{0 if i == 0 else 12}">{escape(line)}</tspan>'
                for i, line in enumerate(lines[shape])
            )
            + "</text>"
        )
        for k, side in enumerate(sides):
            vs = [v for v in series[side].get(shape, []) if v is not None]
            if not vs:
                continue
            y = y0 + (k - (len(sides) - 1) / 2) * 6
            color = COLORS[k % len(COLORS)]
            lo, hi = spread.get((side, shape), (min(vs), max(vs)))
            lo, hi = min(lo, *vs), max(hi, *vs)
            if hi > lo:
                parts.append(
                    f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" '
                    f'stroke="{color}" stroke-width="2" opacity="0.5"/>'
                )
            for v in vs:
                parts.append(
                    f'<circle cx="{x(v):.1f}" cy="{y:.1f}" r="4" fill="{color}" opacity="0.8">'
                    f"<title>{escape(side or '')} {escape(shape)}: {v:.4g} {escape(unit)}</title></circle>"
                )
            med = sorted(vs)[len(vs) // 2]
            parts.append(
                f'<line x1="{x(med):.1f}" y1="{y - 5:.1f}" x2="{x(med):.1f}" y2="{y + 5:.1f}" '
                f'stroke="{color}" stroke-width="2"/>'
            )
    for k, side in enumerate(s for s in sides if s):
        parts.append(
            f'<text x="{label_w + 8 + k * 140}" y="10" fill="{COLORS[sides.index(side) % len(COLORS)]}">'
            f"&#9679; {escape(side)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


Plot = tuple[str, dict[str, dict[str, list[float]]], dict]  # unit, series, spread


def perf_plots(rows) -> list[Plot]:
    """The perf rows as plots, one per unit (times in us, GB/s, TFLOPS ...): per plot, series (the A/B
    side, else the row's or figure's name: the colour) -> shape (the table title first, where one was
    printed) -> one value per row (repeated runs: one point each); and each time's printed min..max."""
    plots: dict[str, tuple[dict, dict]] = {}
    several = len({r.name for r in rows}) > 1
    for row in rows:
        key = f"{row.table} {row.shape}" if row.table else row.shape
        for metric, value in row_values(row):
            unit, figure = unit_of(metric), "" if metric == "us" else metric
            series, spread = plots.setdefault(unit, ({}, {}))
            name = figure or (row.name if several else "")  # a metric by its own name, a time by its row's
            side = " ".join(p for p in (row.side, name) if p)
            series.setdefault(side, {}).setdefault(key, []).append(value)
            if unit == "us" and not figure and row.min_us is not None and row.max_us is not None:
                lo, hi = spread.get((side, key), (row.min_us, row.max_us))
                spread[(side, key)] = (min(lo, row.min_us), max(hi, row.max_us))
    return [(unit, series, spread) for unit, (series, spread) in plots.items()]
