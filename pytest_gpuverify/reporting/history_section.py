"""The report's history section: per target of the report, its trends from the history store
(history/series.py), each row's plot with its steps, regressions listed first."""

from __future__ import annotations

from dataclasses import replace
from html import escape
from pathlib import Path

from pytest_gpuverify.history.series import RowHistory, TargetHistory
from pytest_gpuverify.reporting.trend_svg import trend_plot

MAX_PLOTS = 24  # rows plotted per target; history show lists them all
MAX_POINTS = 100  # commits drawn per row, the newest: the page stays small whatever the store holds
STEP_RULE = (
    "Steps: an L1 piecewise-constant fit of the per-commit medians (asv's step detection), each "
    "boundary kept only when gpuverify compare's rule calls the commits on its two sides apart."
)


def history_section(histories: list[TargetHistory], store: str, ref: str | None, notes: tuple[str, ...] = ()) -> str:
    on = f" on {escape(ref)}" if ref else ""
    said = "".join(f"<li>{escape(n)}</li>" for n in dict.fromkeys(notes))
    said = f"<ul>{said}</ul>" if said else ""
    if not histories:
        return f"<h2 id='history'>History</h2><p>{escape(store)} holds no PASS run{on} of these targets.</p>{said}"
    parts = [f"<h2 id='history'>History</h2><p>From <code>{escape(store)}</code>{on}. {escape(STEP_RULE)}</p>{said}"]
    for history in histories:
        regressions = [(row, step) for row in history.rows for step in row.regressions()]
        listed = "".join(
            f'<li class="FAIL">REGRESSED {escape(row.label())}: {escape(row.step_range(step))} '
            f"({step.before:.4g} to {step.after:.4g}; {escape(step.why)})</li>"
            for row, step in regressions
        )
        facts = ", ".join(f"{k} {v}" for k, v in history.facts.items() if v and k in ("gpu_model", "gpu_arch", "image"))
        rows = sorted(history.rows, key=lambda r: not r.regressions())[:MAX_PLOTS]
        plots = "".join(
            f"<h5>{escape(row.label())}</h5>" + trend_plot(newest(row, MAX_POINTS)) + _drawn(row) for row in rows
        )
        more = (
            f"<p>{len(history.rows) - MAX_PLOTS} more rows: gpuverify history show {escape(history.target)}</p>"
            if len(history.rows) > MAX_PLOTS
            else ""
        )
        parts.append(
            f"<details open><summary>{escape(history.target)} <code>{escape(facts)}</code>: {history.runs} "
            f"PASS runs, {len(regressions)} regression(s)</summary>"
            + (f"<ul>{listed}</ul>" if listed else "")
            + plots
            + more
            + "</details>"
        )
    return "".join(parts)


def _drawn(row: RowHistory) -> str:
    """Where a plot leaves commits out, the page says so."""
    if len(row.points) <= MAX_POINTS:
        return ""
    return (
        f"<p>The newest {MAX_POINTS} of {len(row.points)} commits are drawn; the steps among older ones are "
        "listed above.</p>"
    )


def newest(row: RowHistory, most: int) -> RowHistory:
    """The row's newest ``most`` commits and the steps among them (older steps are listed, not drawn)."""
    first = max(0, len(row.points) - most)
    if not first:
        return row
    return RowHistory(
        row.key,
        row.direction,
        row.points[first:],
        [replace(s, index=s.index - first) for s in row.steps if s.index > first],
        {index - first: why for index, why in row.no_range.items() if index > first},
    )


def history_for(store_path, targets: list[str], ref: str | None, repo: Path | None = None) -> str:
    """The section for ``targets`` from the store at ``store_path`` (StoreError when it cannot be opened), each
    target's commits in the order of ``ref``'s first-parent history in the checkout ``repo`` (series.py)."""
    from contextlib import closing

    from pytest_gpuverify.history.db import shown
    from pytest_gpuverify.history.reader import open_reader
    from pytest_gpuverify.history.series import commit_order, target_histories
    from pytest_gpuverify.history.steps import MOST_POINTS

    histories: list[TargetHistory] = []
    notes: tuple[str, ...] = ()
    with closing(open_reader(store_path)) as reader:
        for target in dict.fromkeys(targets):  # only the commits a fit looks at are read
            found = reader.runs(target=target, watch=False, newest_commits=MOST_POINTS)
            kept, order = commit_order(found, ref, repo)
            histories += target_histories(kept, order=order)
            notes += tuple(f"{target}: {n}" for n in order.notes)
    return history_section(histories, shown(store_path), ref, notes)
