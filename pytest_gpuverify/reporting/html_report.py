"""``gpuverify report TICKET_DIR... -o report.html``: one self-contained page (inline CSS, SVG and a small
script that sorts and filters tables; nothing fetched): a summary first (the verdicts; per A/B target
the geometric mean of the gain with its interval and its regressions, each a link to its row), the
verdict table, with ``--history`` the targets' trends across commits (history_section.py), then per
target (folded in ``<details>``, so 200 targets stay readable) the correctness summary, per-shape plots
and every perf row."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path

from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.reporting.ab_section import (
    AbView,
    ab_view,
    gain_line,
    pairs_table,
    regressions_list,
    side_names,
    table_html,
)
from pytest_gpuverify.reporting.svg import perf_plots, ratio_figures, shape_plot
from pytest_gpuverify.verify.schemas import SchemaError, load_checked

ORDER = {"FAIL": 0, "INCONCLUSIVE": 1, "NO_GPU": 2, "PASS": 3}
LAZY_ROWS = 300  # past this many perf rows a target's table is built when opened: the page opens fast
CSS = """body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}
.PASS{color:#176e2a;font-weight:bold}.FAIL{color:#b00020;font-weight:bold}.INCONCLUSIVE,.NO_GPU{color:#a15c00;font-weight:bold}
details{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:4px 10px}summary{cursor:pointer;font-size:14px}
code{font-size:12px;color:#555}.bad{background:#fff4f4}.REGRESSED{color:#b00020;font-weight:bold}
.IMPROVED{color:#176e2a}.SAME{color:#555}.NOT_COMPARED{color:#a15c00}th{cursor:pointer;user-select:none}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}input.filter{margin:6px 0;padding:2px 6px}
.count{font-size:12px;color:#666}tr:target{outline:2px solid #b00020;background:#fff0c0}
.scroll{max-height:440px;overflow:auto;border:1px solid #eee}
#summary{border:1px solid #ccc;border-radius:4px;padding:4px 14px;background:#fafafa}"""
# Sorting (click a heading: numbers by value), filtering (the box over a table) and opening the folded
# section a link points into: small enough to sit in the page, which stays one file that works offline.
SCRIPT = """<script>
function num(t){const m=t.trim().match(/^[-+]?[0-9.]+(e[-+]?[0-9]+)?/i);return m?parseFloat(m[0]):NaN}
document.querySelectorAll('table.sortable').forEach(function(table){
 table.querySelectorAll('th').forEach(function(th,col){th.addEventListener('click',function(){
  const body=table.tBodies[0],rows=Array.from(body.rows),up=!th.classList.contains('asc');
  table.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
  th.classList.add(up?'asc':'desc');
  const key=function(r){return r.cells[col]?r.cells[col].textContent:''};
  const numeric=rows.every(function(r){return !isNaN(num(key(r)))||key(r).trim()==='-'});
  rows.sort(function(a,b){const x=key(a),y=key(b);
   const d=numeric?((isNaN(num(x))?-Infinity:num(x))-(isNaN(num(y))?-Infinity:num(y))):x.localeCompare(y);
   return up?d:-d});
  rows.forEach(function(r){body.appendChild(r)})})})});
document.querySelectorAll('input.filter').forEach(function(box){box.addEventListener('input',function(){
 const table=document.getElementById(box.dataset.table),words=box.value.toLowerCase().split(/\\s+/);let shown=0;
 Array.from(table.tBodies[0].rows).forEach(function(r){const text=r.textContent.toLowerCase();
  r.hidden=!words.every(function(w){return text.includes(w)});shown+=r.hidden?0:1});
 document.getElementById(box.dataset.table+'-count').textContent=shown+' rows'})});
function fill(d){const t=document.getElementById(d.dataset.table),body=t.tBodies[0];if(body.rows.length)return;
 JSON.parse(document.getElementById(d.dataset.table+'-data').textContent).forEach(function(cells){
  const r=body.insertRow();cells.forEach(function(c){r.insertCell().textContent=c})})}
document.querySelectorAll('details.lazy').forEach(function(d){
 d.addEventListener('toggle',function(){if(d.open)fill(d)});if(d.open)fill(d)});
function openTarget(){const id=decodeURIComponent(location.hash.slice(1));const el=id&&document.getElementById(id);
 if(!el)return;for(let d=el.closest('details');d;d=d.parentElement&&d.parentElement.closest('details'))d.open=true;
 el.scrollIntoView()}
window.addEventListener('hashchange',openTarget);openTarget();
</script>"""


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


def _perf_table(i: int, art: Artifact, names: dict[str, str], folded: bool) -> str:
    """Every perf row (the artifact's whole table: none left out), sortable and filterable. ``folded``, or
    past LAZY_ROWS rows: in a folded section whose rows are built from the page's data when it opens."""
    if not art.perf:
        return "<p>no perf rows</p>"
    metrics = sorted({m for r in art.perf for m in r.metrics})
    head = ["shape", "name", "side", "run", "median us", "min us", "max us", "runs", *metrics]
    rows = [
        [
            f"{r.table} {r.shape}" if r.table else r.shape,
            r.name,
            names.get(r.side or "", r.side or ""),
            "-" if r.run is None else str(r.run),
            _num(r.us_median),
            _num(r.min_us),
            _num(r.max_us),
            str(r.runs) if r.runs is not None else "-",
            *(_num(r.metrics.get(m)) for m in metrics),
        ]
        for r in art.perf
    ]
    ident = f"t{i}-rows"
    if not folded and len(rows) <= LAZY_ROWS:
        return table_html(ident, head, ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows])
    data = json.dumps(rows).replace("<", "\\u003c")  # nothing in it can end or open a tag in the script
    return (
        f'<details class="lazy" data-table="{ident}"><summary>all {len(rows)} perf rows</summary>'
        + table_html(ident, head, [], count=len(rows))
        + f'<script type="application/json" id="{ident}-data">{data}</script></details>'
    )


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


def _section(
    i: int, path: Path, art: Artifact, view: AbView | None, few: bool = False, links_from: Path | None = None
) -> str:
    mark = "" if art.verdict == "PASS" else f"no result: {art.verdict}"
    names = side_names(art)
    plot = "".join(
        f"<h5>{escape(unit)}</h5>" + shape_plot(series, unit=unit, spread=spread, mark=mark)
        for unit, series, spread in perf_plots(art.perf, names)
    )
    ratios = ratio_figures(art.perf)
    if ratios:
        plot += f"<p>Not plotted (ratios, not measurements; in the table): {escape(', '.join(ratios))}</p>"
    perf = (
        "<h4>Perf</h4>"
        if not mark
        else (f"<h4>Perf rows: no result (the target is {art.verdict}; kept in the artifact, never a result)</h4>")
    )
    compared = f"<h4>Base and head</h4><p>{escape(gain_line(view))}</p>" + pairs_table(i, view, names) if view else ""
    rows = _perf_table(i, art, names, folded=view is not None)  # an A/B's compare is what one reads first
    reasons = "".join(f"<li>{escape(r)}</li>" for r in art.reasons)
    opened = " open" if few or (art.verdict != "PASS" and i < 20) else ""
    return (
        f'<details id="{_anchor(i)}"{opened}><summary><span class="{art.verdict}">{art.verdict}</span> '
        f"{escape(_named(art))} <code>{escape(art.host or '')} gpu {escape(_gpus(art))}</code></summary>"
        f"<p><code>{escape(str(path))}</code> &middot; {escape(art.ts)} &middot; {escape(art.command or '')[:200]}</p>"
        + (f"<ul>{reasons}</ul>" if reasons else "")
        + "<h4>Correctness</h4>"
        + _correctness(art)
        + compared
        + perf
        + (plot or "")
        + rows
        + _profiles(path, art, links_from)
        + "</details>"
    )


def _summary(found: list[tuple[Path, Artifact]], views: dict[int, AbView], line: str) -> str:
    """What the page opens on: the verdicts, then each A/B target's gain and its regressions first."""
    ab = "".join(regressions_list(i, _named(found[i][1]), v) for i, v in sorted(views.items(), key=_worst))
    return (
        f'<section id="summary"><h2>Summary</h2><p>{len(found)} targets: {line or "none"}</p>'
        + (f"<p>A/B targets (head against base):</p><ul>{ab}</ul>" if ab else "")
        + "</section>"
    )


def _worst(item: tuple[int, AbView]) -> tuple[int, int]:
    counts = item[1].counts()
    return (-counts.get("REGRESSED", 0), item[0])


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
    views = {i: v for i, (_, a) in enumerate(found) if (v := ab_view(a)) is not None}
    few = len(found) <= 10
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}</style>'
        f"</head><body><h1>{escape(title)}</h1>"
        + _summary(found, views, line)
        + (f"<ul>{notes}</ul>" if notes else "")
        + _summary_table(found)
        + history
        + "<h2>Targets</h2>"
        + "".join(
            _section(i, p, a, views.get(i), few, links_from) for i, (p, a) in enumerate(found) if a.verdict == "PASS"
        )
        + "<h2>Targets without a result (not PASS: their perf rows are no result)</h2>"
        + "".join(
            _section(i, p, a, views.get(i), few, links_from) for i, (p, a) in enumerate(found) if a.verdict != "PASS"
        )
        + SCRIPT
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
