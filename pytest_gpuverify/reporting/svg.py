"""Small SVG plots, written directly (no plotting library): per-shape times, A/B sides, the spread of repeats."""

from __future__ import annotations

from html import escape
from typing import Optional

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def shape_plot(series: dict[str, dict[str, list[float]]], unit: str = "us", width: int = 1000,
               row_height: int = 22, spread: Optional[dict] = None) -> str:
    """``series``: side (or "") -> shape -> the values (one per run). One row per shape; each side's
    points in its colour, its median as a tick, its min..max as a line (the spread of repeats, widened
    by ``spread[(side, shape)] = (lo, hi)``: the min/max a bench printed)."""
    spread = spread or {}
    shapes = list(dict.fromkeys(s for side in series.values() for s in side))
    values = [v for side in series.values() for vs in side.values() for v in vs if v is not None]
    values += [hi for _, hi in spread.values()]
    if not shapes or not values:
        return ""
    top = max(values) * 1.08 or 1.0
    label_w, pad = 420, 10
    plot_w = width - label_w - pad * 2
    height = row_height * len(shapes) + 46
    x = lambda v: label_w + plot_w * (v / top)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">']
    for i in range(5):
        tick = top * i / 4
        parts.append(f'<line x1="{x(tick):.1f}" y1="14" x2="{x(tick):.1f}" y2="{height - 26}" stroke="#ddd"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 12}" text-anchor="middle">{tick:.3g}</text>')
    parts.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{height - 1}" text-anchor="middle">{escape(unit)}</text>')
    sides = list(series)
    for row, shape in enumerate(shapes):
        y0 = 20 + row * row_height
        parts.append(f'<text x="{label_w - 6}" y="{y0 + 4}" text-anchor="end">{escape(shape[-70:])}</text>')
        for k, side in enumerate(sides):
            vs = [v for v in series[side].get(shape, []) if v is not None]
            if not vs:
                continue
            y = y0 + (k - (len(sides) - 1) / 2) * 6
            color = COLORS[k % len(COLORS)]
            lo, hi = spread.get((side, shape), (min(vs), max(vs)))
            lo, hi = min(lo, *vs), max(hi, *vs)
            if hi > lo:
                parts.append(f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" '
                             f'stroke="{color}" stroke-width="2" opacity="0.5"/>')
            for v in vs:
                parts.append(f'<circle cx="{x(v):.1f}" cy="{y:.1f}" r="4" fill="{color}" opacity="0.8">'
                             f'<title>{escape(side or "")} {escape(shape)}: {v:.4g} {escape(unit)}</title></circle>')
            med = sorted(vs)[len(vs) // 2]
            parts.append(f'<line x1="{x(med):.1f}" y1="{y - 5:.1f}" x2="{x(med):.1f}" y2="{y + 5:.1f}" '
                         f'stroke="{color}" stroke-width="2"/>')
    for k, side in enumerate(s for s in sides if s):
        parts.append(f'<text x="{label_w + 8 + k * 140}" y="10" fill="{COLORS[sides.index(side) % len(COLORS)]}">'
                     f'&#9679; {escape(side)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def perf_series(rows) -> tuple[dict[str, dict[str, list[float]]], dict]:
    """The perf rows as plot series: side (A/B) -> shape -> each row's median (repeated runs: several
    rows of one shape, one point each); and each row's printed min..max as the spread."""
    series: dict[str, dict[str, list[float]]] = {}
    spread: dict = {}
    several = len({r.name for r in rows}) > 1
    for row in rows:
        value = row.us_median if row.us_median is not None else _us_metric(row)
        if value is None:
            continue
        key = row.shape  # the A/B side, else the row's name (ck vs triton), is the colour
        side = f"{row.side} {row.name}" if row.side and several else row.side or (row.name if several else "")
        series.setdefault(side, {}).setdefault(key, []).append(value)
        if row.min_us is not None and row.max_us is not None:
            lo, hi = spread.get((side, key), (row.min_us, row.max_us))
            spread[(side, key)] = (min(lo, row.min_us), max(hi, row.max_us))
    return series, spread


def _us_metric(row) -> Optional[float]:
    """A row without a median: its first time metric (``mean_us``)."""
    return next((v for k, v in sorted(row.metrics.items()) if k.endswith("us") and v is not None), None)
