"""A perf row's trend across commits as a small SVG (written directly, as svg.py's plots): one point per
commit (its median; its runs' min..max as a line), the detected steps as dashed lines, a regression's
commit range shaded and named."""

from __future__ import annotations

from html import escape

from pytest_gpuverify.compare.core import REGRESSED
from pytest_gpuverify.history.series import RowHistory
from pytest_gpuverify.parsers.figures import unit_of
from pytest_gpuverify.reporting.svg import COLORS

BAD, GOOD = "#b00020", "#176e2a"


def trend_plot(row: RowHistory, width: int = 1000, height: int = 240) -> str:
    points = row.points
    if not points:
        return ""
    lows, highs = [min(p.values) for p in points], [max(p.values) for p in points]
    bottom, top = min(lows), max(highs)
    pad_v = (top - bottom) * 0.1 or abs(top) * 0.05 or 1.0
    bottom, top = bottom - pad_v, top + pad_v
    left, right, upper, lower = 70, 20, 28, 58
    plot_w, plot_h = width - left - right, height - upper - lower
    step_x = plot_w / max(1, len(points) - 1) if len(points) > 1 else 0.0
    x = lambda i: left + (i * step_x if len(points) > 1 else plot_w / 2)  # noqa: E731
    y = lambda v: upper + plot_h * (1 - (v - bottom) / (top - bottom))  # noqa: E731
    unit = unit_of(row.key[4])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">'
    ]
    for k in range(5):
        tick = bottom + (top - bottom) * k / 4
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.4g}</text>')
    parts.append(
        f'<text x="12" y="{upper + plot_h / 2:.0f}" transform="rotate(-90 12 {upper + plot_h / 2:.0f})" '
        f'text-anchor="middle">{escape(unit)} ({"higher" if row.direction == "higher" else "lower"} is better)'
        "</text>"
        if row.direction
        else ""
    )
    for step in row.steps:
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
        parts.append(
            f'<text x="{mid:.1f}" y="{upper - 8}" text-anchor="middle" fill="{color}" font-weight="bold">'
            f"{escape(step.call)} {escape(row.step_range(step))} ({step.after / step.before:.3f}x)</text>"
        )
    color = COLORS[0]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(i):.1f},{y(p.median):.1f}" for i, p in enumerate(points))
    parts.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="1.5" opacity="0.6"/>')
    every = max(1, len(points) // 12)  # at most about 12 commit labels
    for i, p in enumerate(points):
        if highs[i] > lows[i]:
            parts.append(
                f'<line x1="{x(i):.1f}" y1="{y(lows[i]):.1f}" x2="{x(i):.1f}" y2="{y(highs[i]):.1f}" '
                f'stroke="{color}" stroke-width="2" opacity="0.4"/>'
            )
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="4" fill="{color}"><title>{escape(p.short())} '
            f"{escape(p.ts[:19])}: median {p.median:.4g} {escape(unit)}, {len(p.values)} runs</title></circle>"
        )
        if i % every == 0 or i == len(points) - 1:
            parts.append(
                f'<text x="{x(i):.1f}" y="{upper + plot_h + 16}" text-anchor="end" '
                f'transform="rotate(-30 {x(i):.1f} {upper + plot_h + 16})">{escape(p.short()[:8])}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle">commit (oldest first)</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
