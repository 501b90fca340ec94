"""The per-shape plots of a target's perf rows, as SVG written here (every label a ``<text>``, placed
clear of the others by axis.py's measures): one row per shape, each series (an A/B side, a row's or
figure's name) on its own line in its colour with its runs as points, its median as a tick and its
min..max as a line; a log value axis where the values span decades.

Written here rather than by a plotting library: the page must stay one file that opens offline, every
label must be a text element the browser lays out (searchable, and checked for overlaps from the DOM),
and an A/B of 2,400 rows must render in well under a second; the few things a library would add
(nice ticks, log decades, label placement) are axis.py's hundred lines, with no dependency to install."""

from __future__ import annotations

import re
from html import escape
from math import log10

from pytest_gpuverify.parsers.figures import row_values, unit_of
from pytest_gpuverify.reporting.axis import (
    FONT,
    kept_apart,
    linear_ticks,
    log_domain,
    log_ticks,
    spans_decades,
    text_width,
    tick_labels,
    wrap,
)

# matplotlib's tab10, base blue and head red first: ten series apart before a colour repeats
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LABEL_WIDTH = 360  # px at most for the shape labels (wrapped onto more lines past it, never cut)
LINE = 13  # px between the lines of a label
SUB = 8  # px between the lines of one shape's series
# A figure that is a ratio of two measurements (uplift, speedup, a percentage): the table shows it; the
# plots show measurements only, never a ratio on an axis beside times.
NOT_MEASURED = re.compile(r"uplift|speed-?up|ratio|gain|x\s*faster|pct|percent|%", re.I)


def shape_plot(
    series: dict[str, dict[str, list[float]]],
    unit: str = "us",
    width: int = 1000,
    spread: dict | None = None,
    mark: str = "",
) -> str:
    """``series``: its name (shown once, in the legend) -> shape -> the values (one per run). The shapes
    are the rows (their labels on the left), the values the axis (its ticks on top too for a tall plot),
    ``spread[(series, shape)] = (lo, hi)`` widens a line's min..max (what a bench printed); ``mark`` is
    written above the plot (a target with no result)."""
    spread = spread or {}
    shapes = list(dict.fromkeys(s for side in series.values() for s in side))
    values = [v for side in series.values() for vs in side.values() for v in vs if v is not None]
    values += [v for lo_hi in spread.values() for v in lo_hi]
    if not shapes or not values:
        return ""
    lo, hi = min(values), max(values)
    log = spans_decades(lo, hi)
    if log:
        lo, hi = log_domain(lo, hi)
        ticks = log_ticks(lo, hi)
    else:
        ticks = linear_ticks(lo, hi)
        lo, hi = ticks[0], ticks[-1]
    names = list(series)
    label_w = min(LABEL_WIDTH, max(text_width(line) for s in shapes for line in wrap(s, LABEL_WIDTH)) + 14)
    labels = tick_labels(ticks)
    # the axis ends where its end ticks' labels still fit: beside the shape labels, inside the plot
    left = label_w + 8 + text_width(labels[0]) / 2
    right = width - 8 - text_width(labels[-1]) / 2
    lines = {s: wrap(s, label_w - 8) for s in shapes}
    parts: list[str] = []
    y = 4.0
    if mark:
        parts.append(f'<text x="{left:.0f}" y="{y + 13:.0f}" font-size="13" fill="#b00020">{escape(mark)}</text>')
        y += 20
    y = _legend(parts, [n for n in names if n and n != unit], y, width)  # a lone figure is named by the title
    tall = len(shapes) > 12
    header = y + 14
    parts.append(f'<text x="4" y="{header:.0f}" font-weight="bold">shape</text>')
    top = header + 8
    x = _scale(lo, hi, log, left, right)
    rows_top = top
    centres: dict[str, float] = {}
    for s in shapes:
        h = max(SUB * len(names) + 8, LINE * len(lines[s]) + 6)
        centres[s] = rows_top + h / 2
        rows_top += h
    bottom = rows_top
    height = bottom + 40
    shown = kept_apart([x(t) for t in ticks], [text_width(lb) for lb in labels], label_w, width - 2)
    for t in ticks:
        parts.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{bottom}" stroke="#e4e4e4"/>')
    for k in shown:
        parts.append(f'<text x="{x(ticks[k]):.1f}" y="{bottom + 14:.0f}" text-anchor="middle">{labels[k]}</text>')
        if tall:
            parts.append(f'<text x="{x(ticks[k]):.1f}" y="{header:.0f}" text-anchor="middle">{labels[k]}</text>')
    title = f"{unit} (log scale)" if log else unit
    parts.append(
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 32:.0f}" text-anchor="middle">{escape(title)}</text>'
    )
    for s in shapes:
        c = centres[s]
        first = c - LINE * (len(lines[s]) - 1) / 2 + 4
        parts.append(
            f'<text x="{label_w - 4:.0f}" y="{first:.1f}" text-anchor="end">'
            + "".join(
                f'<tspan x="{label_w - 4:.0f}" dy="{0 if i == 0 else LINE}">{escape(line)}</tspan>'
                for i, line in enumerate(lines[s])
            )
            + "</text>"
        )
        for k, name in enumerate(names):
            vs = [v for v in series[name].get(s, []) if v is not None]
            if vs:
                _series_line(
                    parts, x, c + (k - (len(names) - 1) / 2) * SUB, COLORS[k % len(COLORS)], vs, spread.get((name, s))
                )
        _tips(parts, s, {n: series[n].get(s, []) for n in names}, unit, left, right, c)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="{FONT}">' + "".join(parts) + "</svg>"
    )


def _scale(lo: float, hi: float, log: bool, left: float, right: float):
    if log:
        span = log10(hi) - log10(lo)
        return lambda v: left + (right - left) * (log10(max(v, lo)) - log10(lo)) / span
    return lambda v: left + (right - left) * (v - lo) / ((hi - lo) or 1.0)


def _legend(parts: list[str], names: list[str], y: float, width: int) -> float:
    """One label per series, in its colour, laid out in lines that never run past the plot's edge."""
    if not names:
        return y
    at, y = 8.0, y + 13
    for k, name in enumerate(names):
        w = 14 + text_width(name)
        if at > 8 and at + w > width - 8:
            at, y = 8.0, y + 16
        color = COLORS[k % len(COLORS)]
        parts.append(f'<rect x="{at:.0f}" y="{y - 8:.0f}" width="8" height="8" fill="{color}"/>')
        parts.append(f'<text x="{at + 12:.0f}" y="{y:.0f}" fill="{color}">{escape(name)}</text>')
        at += w + 18
    return y + 6


def _series_line(parts: list[str], x, y: float, color: str, vs: list[float], printed) -> None:
    lo, hi = min(vs), max(vs)
    if printed:
        lo, hi = min(lo, printed[0]), max(hi, printed[1])
    if hi > lo:
        parts.append(
            f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="{color}" '
            'stroke-width="2" opacity="0.5"/>'
        )
    # the runs' points as one path of dots (one element, not one per run: a 2,400-row A/B draws fast)
    dots = "".join(f"M{x(v) - 3:.1f},{y:.1f}a3,3 0 1,0 6,0a3,3 0 1,0 -6,0" for v in vs)
    parts.append(f'<path class="runs" d="{dots}" fill="{color}" opacity="0.7"/>')
    med = sorted(vs)[len(vs) // 2]
    parts.append(
        f'<line x1="{x(med):.1f}" y1="{y - 4:.1f}" x2="{x(med):.1f}" y2="{y + 4:.1f}" stroke="{color}" '
        'stroke-width="2.5"/>'
    )


def _tips(parts: list[str], shape: str, by_name: dict, unit: str, left: float, right: float, c: float) -> None:
    """The shape's row as one hover target: its series' medians and ranges in one tooltip."""
    said = "; ".join(
        f"{name or 'value'}: median {sorted(vs)[len(vs) // 2]:.4g} ({min(vs):.4g}..{max(vs):.4g}, {len(vs)} runs)"
        for name, vs in ((n, [v for v in vals if v is not None]) for n, vals in by_name.items())
        if vs
    )
    parts.append(
        f'<rect x="{left:.1f}" y="{c - SUB:.1f}" width="{right - left:.1f}" height="{2 * SUB}" fill="transparent">'
        f"<title>{escape(shape)} ({escape(unit)}): {escape(said)}</title></rect>"
    )


Plot = tuple[str, dict[str, dict[str, list[float]]], dict]  # unit, series, spread


def perf_plots(rows, side_names: dict[str, str] | None = None) -> list[Plot]:
    """The perf rows as plots, one per unit (times in us, GB/s, TFLOPS ...): per plot, series (the A/B
    side by ``side_names``, e.g. ``A`` -> ``base main``; else the row's or figure's name: the colour) ->
    shape (the table title first, where one was printed) -> one value per row (repeated runs: one point
    each); and each time's printed min..max. A ratio figure (``uplift_pct``) is not plotted."""
    side_names = side_names or {}
    plots: dict[str, tuple[dict, dict]] = {}
    several = len({r.name for r in rows}) > 1
    for row in sorted(rows, key=lambda r: side_names.get(r.side or "", r.side or "")):
        key = f"{row.table} {row.shape}" if row.table else row.shape
        side = side_names.get(row.side or "", row.side or "")
        for metric, value in row_values(row):
            if NOT_MEASURED.search(metric):
                continue
            unit, figure = unit_of(metric), "" if metric == "us" else metric
            series, spread = plots.setdefault(unit, ({}, {}))
            name = figure or (row.name if several else "")  # a metric by its own name, a time by its row's
            if not side and len(name) == 1:  # a printed name such as aiter's "B avg": never mistaken for a side
                name = f'"{name}" (as printed)'
            label = " ".join(p for p in (side, name) if p)
            series.setdefault(label, {}).setdefault(key, []).append(value)
            if unit == "us" and not figure and row.min_us is not None and row.max_us is not None:
                lo, hi = spread.get((label, key), (row.min_us, row.max_us))
                spread[(label, key)] = (min(lo, row.min_us), max(hi, row.max_us))
    return [(unit, series, spread) for unit, (series, spread) in plots.items()]


def ratio_figures(rows) -> list[str]:
    """The ratio figures the rows hold (shown in the table, not plotted)."""
    return sorted({m for r in rows for m in r.metrics if NOT_MEASURED.search(m)})
