"""What the report's plots share: tick values (1-2-5 steps on a linear axis, decades on a log one),
labels that tell ticks apart, and the width a label takes, so that labels are placed clear of each
other and of the plot's edges before the browser draws them."""

from __future__ import annotations

from math import ceil, floor, log10

FONT = 11  # px: the plots' text size

# Advance widths (em) of DejaVu Sans / Liberation Sans, the sans-serif fonts of a Linux browser; rounded up
# so a label measured here is never narrower than drawn.
_NARROW, _WIDE = set(" ,.:;'|!iljI()[]{}ft/"), set("mwMWG@%&=+<>~_#")


def text_width(text: str, size: float = FONT) -> float:
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.36
        elif ch in _WIDE:
            em += 0.86
        elif ch.isupper():
            em += 0.74
        else:
            em += 0.64
    return em * size


def wrap(text: str, width_px: float, size: float = FONT) -> list[str]:
    """``text`` in lines of at most ``width_px``, broken between words (never cut: a word longer than a
    line is broken between its characters)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while text_width(word, size) > width_px:  # a word wider than a line: as many characters as fit
            cut = max(1, max(k for k in range(1, len(word) + 1) if text_width(word[:k], size) <= width_px or k == 1))
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:cut])
            word = word[cut:]
        joined = f"{line} {word}" if line else word
        if text_width(joined, size) <= width_px:
            line = joined
        else:
            lines.append(line)
            line = word
    return [*lines, line] if line or not lines else lines


def spans_decades(lo: float, hi: float) -> bool:
    """A log axis where the values are positive and the largest is over 20 times the smallest."""
    return lo > 0 and hi / lo > 20


def linear_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Ticks on 1, 2 or 5 times a power of ten covering [lo, hi], at most ``most`` + 1 of them."""
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / most
    power = 10 ** floor(log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first, last = floor(lo / step + 1e-9), ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def log_domain(lo: float, hi: float) -> tuple[float, float]:
    """A log axis's ends: a little past the values on each side."""
    return lo / 1.25, hi * 1.25


def log_ticks(lo: float, hi: float) -> list[float]:
    """The powers of ten in [lo, hi]; where it spans under four decades, 2 and 5 times them too."""
    first, last = floor(log10(lo)), ceil(log10(hi))
    mults = (1,) if log10(hi / lo) > 4 else (1, 2, 5)
    return [m * 10.0**e for e in range(first, last + 1) for m in mults if lo <= m * 10.0**e <= hi]


def tick_labels(ticks: list[float]) -> list[str]:
    """Plain numbers (``0.05``, ``200``, ``12500``; ``1e+07`` past a million) with the fewest digits that
    keep every label apart: a flat series never repeats one label along its axis."""
    for digits in range(1, 10):
        labels = [number(t, digits) for t in ticks]
        if len(set(labels)) == len(labels):
            return labels
    return [repr(t) for t in ticks]


def number(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e6:
        decimals = max(0, digits - 1 - floor(log10(abs(value))))
        text = f"{value:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.{digits - 1}e}"


def kept_apart(centres: list[float], widths: list[float], low: float, high: float, gap: float = 6) -> list[int]:
    """The indexes of labels (centred at ``centres``) to draw: each inside [low, high] and clear of the
    one drawn before it by ``gap``; the others are left out rather than drawn over each other."""
    kept: list[int] = []
    right = low - gap
    for i, (c, w) in enumerate(zip(centres, widths)):
        left = c - w / 2
        if left >= right + gap and left >= low and c + w / 2 <= high:
            kept.append(i)
            right = c + w / 2
    return kept
