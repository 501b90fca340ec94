"""The plots' axes: 1-2-5 ticks, decades on a log axis, labels that never repeat, wrapping that never
cuts, labels kept apart."""

from __future__ import annotations

from math import log10

from pytest_gpuverify.reporting.axis import (
    kept_apart,
    linear_ticks,
    log_domain,
    log_ticks,
    spans_decades,
    text_width,
    tick_labels,
    wrap,
)


def test_linear_ticks_step_by_one_two_or_five_and_cover_the_values():
    for lo, hi in ((0.0, 1.0), (12.3, 98.1), (40.0, 13000.0), (0.00102, 0.00131), (-5.0, 7.5)):
        ticks = linear_ticks(lo, hi)
        steps = {round(b - a, 12) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1, ticks
        step = steps.pop()
        mantissa = round(step / 10 ** int(log10(step) // 1), 6)
        assert mantissa in (1, 2, 5, 10), (step, mantissa)
        assert ticks[0] <= lo and ticks[-1] >= hi and 3 <= len(ticks) <= 8, ticks


def test_a_flat_row_gets_ticks_whose_labels_all_differ():
    ticks = linear_ticks(12990.0, 12990.0)
    labels = tick_labels(ticks)
    assert len(ticks) >= 3 and len(set(labels)) == len(labels), labels
    assert tick_labels([1.2991, 1.2992, 1.2993]) == ["1.2991", "1.2992", "1.2993"]


def test_log_axis_where_values_span_decades_ticks_on_decades():
    assert spans_decades(40, 13000) and not spans_decades(40, 400) and not spans_decades(0, 100)
    lo, hi = log_domain(40, 13000)
    ticks = log_ticks(lo, hi)
    assert {100.0, 1000.0, 10000.0} <= set(ticks) and all(lo <= t <= hi for t in ticks)
    assert tick_labels(log_ticks(*log_domain(0.5, 200000))) == ["1", "10", "100", "1000", "10000", "100000"]


def test_wrap_keeps_every_character_and_each_line_fits():
    shape = "M=8192, N=8192, K=8192, dtype=torch.bfloat16, layout=TN, split_k=4, a_very_long_word_" * 2
    lines = wrap(shape, 200)
    assert "".join(lines).replace(" ", "") == shape.replace(" ", "")
    assert all(text_width(line) <= 200 for line in lines) and len(lines) > 2


def test_kept_labels_never_overlap_nor_pass_the_edges():
    centres, widths = [10.0 * k for k in range(30)], [24.0] * 30
    kept = kept_apart(centres, widths, 0, 250)
    boxes = [(centres[k] - widths[k] / 2, centres[k] + widths[k] / 2) for k in kept]
    assert boxes and all(a[1] < b[0] for a, b in zip(boxes, boxes[1:]))
    assert boxes[0][0] >= 0 and boxes[-1][1] <= 250 and len(kept) < 30
