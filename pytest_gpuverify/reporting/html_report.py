"""``gpuverify report TICKET_DIR... -o report.html``: one self-contained page (inline CSS and SVG, no
network): a verdict table at the top, with ``--history`` the targets' trends across commits below it
(history_section.py), then per target (folded in ``<details>``, so 200 targets stay readable) the
correctness summary, the perf rows and a per-shape plot."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.reporting.svg import perf_plots, shape_plot
from pytest_gpuverify.verify.schemas import SchemaError, load_checked

ORDER = {"FAIL": 0, "INCONCLUSIVE": 1, "NO_GPU": 2, "PASS": 3}
MAX_ROWS = 200  # perf rows shown per target; the artifact holds them all
CSS = """body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}
.PASS{color:#176e2a;font-weight:bold}.FAIL{color:#b00020;font-weight:bold}.INCONCLUSIVE,.NO_GPU{color:#a15c00;font-weight:bold}
details{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:4px 10px}summary{cursor:pointer;font-size:14px}
code{font-size:12px;color:#555}.bad{background:#fff4f4}"""


def gather(dirs: list[Path]) -> tuple[list[tuple[Path, Artifact]], list[str]]:
    found, problems = [], []
    for d in dirs:
        paths = sorted(d.glob("bench_*.json")) if d.is_dir() else [d]
        for path in paths:
            try:
                found.append((path, load_checked(path)))
            except (SchemaError, OSError, ValueError) as exc:
                problems.append(f"{path}: not read ({exc})")
    found.sort(key=lambda pa: (ORDER.get(pa[1].verdict, 9), pa[1].topic))
    return found, problems


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _gpus(art: Artifact) -> str:
    return ",".join(f"{g.index} {g.arch or ''}".strip() for g in art.gpus) or "-"


def _anchor(i: int) -> str:
    return f"t{i}"


def _named(art: Artifact) -> str:
    """A target told apart from another of the same name: its ticket, then its topic."""
    return f"{art.key} / {art.topic}" if art.key else art.topic


def _summary_table(found: list[tuple[Path, Artifact]]) -> str:
    rows = [
        "<table><tr><th>Verdict</th><th>Target</th><th>Host</th><th>GPU</th><th>Shapes</th>"
        "<th>SNR dB</th><th>Perf rows</th><th>First reason</th></tr>"
    ]
    for i, (_path, art) in enumerate(found):
        reason = art.reasons[0] if art.reasons and art.verdict != "PASS" else ""
        rows.append(
            f'<tr class="{"bad" if art.verdict != "PASS" else ""}"><td class="{art.verdict}">{art.verdict}</td>'
            f'<td><a href="#{_anchor(i)}">{escape(_named(art))}</a></td><td>{escape(art.host or "-")}</td>'
            f"<td>{escape(_gpus(art))}</td><td>{art.correctness.shapes_checked}</td>"
            f"<td>{_num(art.correctness.snr_db)}</td><td>{len(art.perf)}</td><td>{escape(reason[:160])}</td></tr>"
        )
    return "".join(rows) + "</table>"


def _correctness(art: Artifact) -> str:
    c = art.correctness
    cells = [
        ("passed", c.passed),
        ("shapes checked", c.shapes_checked),
        ("checks passed/warn/failed", f"{c.checks_passed}/{c.checks_warning}/{c.checks_failed}"),
        ("SNR dB", _num(c.snr_db)),
        ("cosine", _num(c.cosine_sim)),
        ("max abs error", _num(c.max_abs_error)),
        ("NaNs", c.nan_count),
        ("rtol/atol", f"{_num(c.rtol)}/{_num(c.atol)}"),
        ("dtype", c.dtype or "-"),
    ]
    return (
        "<table><tr>"
        + "".join(f"<th>{escape(k)}</th>" for k, _ in cells)
        + "</tr><tr>"
        + "".join(f"<td>{escape(str(v))}</td>" for _, v in cells)
        + "</tr></table>"
    )


def _perf_table(art: Artifact) -> str:
    if not art.perf:
        return "<p>no perf rows</p>"
    metrics = sorted({m for r in art.perf for m in r.metrics})[:6]
    head = ["shape", "name", "side", "median us", "min us", "max us", "runs", *metrics]
    rows = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in art.perf[:MAX_ROWS]:
        cells = [
            r.shape,
            r.name,
            r.side or "",
            _num(r.us_median),
            _num(r.min_us),
            _num(r.max_us),
            r.runs if r.runs is not None else "-",
            *(_num(r.metrics.get(m)) for m in metrics),
        ]
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    more = f"<p>{len(art.perf) - MAX_ROWS} more rows in the artifact</p>" if len(art.perf) > MAX_ROWS else ""
    return "".join(rows) + "</table>" + more


def _profiles(path: Path, art: Artifact, links_from: Path | None) -> str:
    """The trace and profile files of the run (--gpu-trace, --gpu-profiler), each linked where it lies."""
    if not art.profiles:
        return ""
    items = []
    for p in art.profiles:
        what = f"{p.purpose}: {p.tool} {p.version or ''}".strip() + f" ({p.format})"
        if p.path:
            target = path.parent / p.path
            href = os.path.relpath(target, links_from) if links_from is not None else target.as_uri()
            items.append(f'<li>{escape(what)}: <a href="{escape(href)}">{escape(p.path)}</a></li>')
        else:
            items.append(f"<li>{escape(what)}: {escape(p.problem or 'no file')}</li>")
    return "<h4>Traces and profiles</h4><ul>" + "".join(items) + "</ul>"


def _section(i: int, path: Path, art: Artifact, few: bool = False, links_from: Path | None = None) -> str:
    mark = "" if art.verdict == "PASS" else f"no result: {art.verdict}"
    plot = "".join(
        f"<h5>{escape(unit)}</h5>" + shape_plot(series, unit=unit, spread=spread, mark=mark)
        for unit, series, spread in perf_plots(art.perf[:MAX_ROWS])
    )
    perf = (
        "<h4>Perf</h4>"
        if not mark
        else (f"<h4>Perf rows: no result (the target is {art.verdict}; kept in the artifact, never a result)</h4>")
    )
    reasons = "".join(f"<li>{escape(r)}</li>" for r in art.reasons)
    opened = " open" if few or (art.verdict != "PASS" and i < 20) else ""
    return (
        f'<details id="{_anchor(i)}"{opened}><summary><span class="{art.verdict}">{art.verdict}</span> '
        f"{escape(_named(art))} <code>{escape(art.host or '')} gpu {escape(_gpus(art))}</code></summary>"
        f"<p><code>{escape(str(path))}</code> &middot; {escape(art.ts)} &middot; {escape(art.command or '')[:200]}</p>"
        + (f"<ul>{reasons}</ul>" if reasons else "")
        + "<h4>Correctness</h4>"
        + _correctness(art)
        + perf
        + (plot or "")
        + _perf_table(art)
        + _profiles(path, art, links_from)
        + "</details>"
    )


def render(
    found: list[tuple[Path, Artifact]],
    problems: list[str],
    title: str = "gpuverify report",
    history: str = "",
    links_from: Path | None = None,
) -> str:
    """The page; ``links_from``: the folder it is written to, so its links to the runs' files are relative."""
    counts: dict[str, int] = {}
    for _, art in found:
        counts[art.verdict] = counts.get(art.verdict, 0) + 1
    line = ", ".join(
        f'<span class="{v}">{n} {v}</span>' for v, n in sorted(counts.items(), key=lambda c: ORDER.get(c[0], 9))
    )
    notes = "".join(f"<li>{escape(p)}</li>" for p in problems)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}</style>'
        f"</head><body><h1>{escape(title)}</h1><p>{len(found)} targets: {line or 'none'}</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + _summary_table(found)
        + history
        + "<h2>Targets</h2>"
        + "".join(
            _section(i, p, a, len(found) <= 10, links_from) for i, (p, a) in enumerate(found) if a.verdict == "PASS"
        )
        + "<h2>Targets without a result (not PASS: their perf rows are no result)</h2>"
        + "".join(
            _section(i, p, a, len(found) <= 10, links_from) for i, (p, a) in enumerate(found) if a.verdict != "PASS"
        )
        + "</body></html>\n"
    )


def write_report(
    dirs: list[Path],
    out: Path,
    history_store: Path | str | None = None,
    ref: str | None = None,
    repo: Path | None = None,
) -> int:
    """The page; with ``history_store``, its section of the report's targets' trends (history_section.py)."""
    found, problems = gather(dirs)
    history, unread = "", len(problems)
    if history_store is not None:
        from pytest_gpuverify.history.db import StoreError
        from pytest_gpuverify.reporting.history_section import history_for

        try:
            history = history_for(history_store, [a.target.name if a.target else a.topic for _, a in found], ref, repo)
        except StoreError as exc:
            problems.append(f"history not shown: {exc}")
    out.write_text(render(found, problems, history=history, links_from=out.resolve().parent), encoding="utf-8")
    print(
        f"{out}: {len(found)} targets"
        + (f", {unread} files not read" if unread else "")
        + ("; " + problems[-1] if len(problems) > unread else "")
    )
    return 0 if found and not problems else 1
