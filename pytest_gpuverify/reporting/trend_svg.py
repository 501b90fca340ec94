"""A perf row's trend across commits as a small SVG (written directly, as svg.py's plots): one point per
commit (its median; its runs' min..max as a line), the detected steps as dashed lines, a regression's
commit range shaded and named."""

from __future__ import annotations

from html import escape

from pytest_gpuverify.compare.core import REGRESSED
from pytest_gpuverify.history.series import RowHistory
from pytest_gpuverify.history.steps import Step
from pytest_gpuverify.parsers.figures import unit_of
from pytest_gpuverify.reporting.axis import FONT, linear_ticks, text_width, tick_labels
from pytest_gpuverify.reporting.svg import COLORS

BAD, GOOD = "#b00020", "#176e2a"


def trend_plot(row: RowHistory, width: int = 1000, height: int = 250) -> str:
    points = row.points
    if not points:
        return ""
    lows, highs = [min(p.values) for p in points], [max(p.values) for p in points]
    ticks = linear_ticks(min(lows), max(highs), most=5)
    bottom, top = ticks[0], ticks[-1]
    labels = tick_labels(ticks)
    unit = unit_of(row.key[4])
    steps = _step_labels(row, points)
    # the y title left of the widest tick label; the step labels in as many lines as keep them apart
    left = int(max(text_width(lb) for lb in labels)) + 34
    right, lower = 24, 78
    upper = 14 + 16 * (max((line for line, *_ in steps), default=-1) + 1)
    plot_w, plot_h = width - left - right, height - upper - lower
    step_x = plot_w / max(1, len(points) - 1) if len(points) > 1 else 0.0
    x = lambda i: left + (i * step_x if len(points) > 1 else plot_w / 2)  # noqa: E731
    y = lambda v: upper + plot_h * (1 - (v - bottom) / (top - bottom))  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="{FONT}">'
    ]
    for tick, label in zip(ticks, labels):
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{label}</text>')
    better = {"higher": ", higher is better", "lower": ", lower is better"}.get(row.direction or "", "")
    mid_y = upper + plot_h / 2
    parts.append(
        f'<text x="14" y="{mid_y:.0f}" transform="rotate(-90 14 {mid_y:.0f})" text-anchor="middle">'
        f"{escape(unit + better)}</text>"
    )
    for line, step, centre, text in steps:
        bad = step.call == REGRESSED
        x0, x1 = x(step.index - 1), x(step.index)
        color = BAD if bad else GOOD
        if bad:
            parts.append(
                f'<rect x="{x0:.1f}" y="{upper}" width="{x1 - x0:.1f}" height="{plot_h}" fill="{BAD}" opacity="0.12"/>'
            )
        mid = (x0 + x1) / 2
        parts.append(
            f'<line x1="{mid:.1f}" y1="{upper}" x2="{mid:.1f}" y2="{upper + plot_h}" stroke="{color}" '
            'stroke-dasharray="5,4" stroke-width="1.5"/>'
        )
        half = text_width(text) / 2
        at = min(max(x(centre), half + 4), width - half - 4)  # the whole label inside the plot
        parts.append(
            f'<text x="{at:.1f}" y="{upper - 6 - 16 * line}" text-anchor="middle" fill="{color}" '
            f'font-weight="bold">{escape(text)}</text>'
        )
    color = COLORS[0]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(i):.1f},{y(p.median):.1f}" for i, p in enumerate(points))
    parts.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="1.5" opacity="0.6"/>')
    # commit labels every so many points counted back from the newest, so the newest always has one
    every = max(1, -(-len(points) // 12))
    named = set(range(len(points) - 1, -1, -every))
    for i, p in enumerate(points):
        if highs[i] > lows[i]:
            parts.append(
                f'<line x1="{x(i):.1f}" y1="{y(lows[i]):.1f}" x2="{x(i):.1f}" y2="{y(highs[i]):.1f}" '
                f'stroke="{color}" stroke-width="2" opacity="0.4"/>'
            )
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="3.5" fill="{color}"><title>{escape(p.short())} '
            f"{escape(p.ts[:19])}: median {p.median:.4g} {escape(unit)}, {len(p.values)} runs</title></circle>"
        )
        if i in named:
            base = upper + plot_h + 20
            parts.append(
                f'<text x="{x(i) + 4:.1f}" y="{base}" text-anchor="end" '
                f'transform="rotate(-30 {x(i) + 4:.1f} {base})">{escape(p.short()[:8])}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">commit (oldest first)</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _step_labels(row: RowHistory, points) -> list[tuple[int, Step, float, str]]:
    """Each step's label (its line above the plot, the step, its centre as a point index, its text):
    a label goes on the first line where it clears the labels already there."""
    placed: list[tuple[int, Step, float, str]] = []
    ends: dict[int, float] = {}  # line -> the right end (in point widths) of its last label
    n = max(1, len(points) - 1)
    for step in row.steps:
        text = f"{step.call} {row.step_range(step)} ({step.after / step.before:.3f}x)"
        centre = step.index - 0.5
        half = text_width(text) / 2 / 900 * n  # about the label's half width, in points
        line = next(k for k in range(len(ends) + 1) if centre - half > ends.get(k, -1e9))
        ends[line] = centre + half + 0.02 * n
        placed.append((line, step, centre, text))
    return placed
