"""``gpuverify report`` pages opened in headless Chromium: in every plot no two text labels overlap and
none runs past the plot's edge (read from the DOM's boxes), on one target, an A/B of 120 shapes over
three decades and a 10,000-run history; the A/B page opens on its summary, fetches nothing, and its
tables sort, filter and open at a regression's row. (Its render time is bench/report_render.py's.)"""

from __future__ import annotations

import re

import pytest
from chromium import probe
from report_cases import AB_RUNS, AB_SHAPES, ab_page, crowded_page, history_page, one_target_page

CASES = {"one target": one_target_page, "10,000-run history": history_page, "crowded labels": crowded_page}
PLOTS = {"one target": 2, "10,000-run history": 3, "crowded labels": 2}


def no_label_overlaps(found: dict, plots: int) -> None:
    assert found["plots"] == plots and found["texts"] >= 10 * plots, found
    assert found["overlaps"] == [], found["overlaps"][:10]
    assert found["clipped"] == [], found["clipped"][:10]


@pytest.mark.parametrize("case", list(CASES))
def test_no_label_overlaps_another_or_the_edge(case, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(CASES[case](), encoding="utf-8")
    no_label_overlaps(probe(page), plots=PLOTS[case])


# Filter the pairs table to one shape, sort the calls, follow the summary's first regression link.
ACTIONS = """
const raw=document.querySelectorAll('#t0-rows tbody tr').length;
const box=document.querySelector('input.filter[data-table="t0-pairs"]');
box.value='tokens=816,';box.dispatchEvent(new Event('input'));
const visible=Array.from(document.querySelectorAll('#t0-pairs tbody tr')).filter(function(r){return !r.hidden}).length;
const count=document.getElementById('t0-pairs-count').textContent;
box.value='';box.dispatchEvent(new Event('input'));
const th=document.querySelectorAll('#t0-pairs th')[6];th.click();
const ratios=Array.from(document.querySelectorAll('#t0-pairs tbody tr')).map(function(r){return parseFloat(r.cells[6].textContent)});
const link=document.querySelector('#summary ul.regressions a');
const row=document.getElementById(link.getAttribute('href').slice(1));
document.querySelectorAll('details').forEach(function(d){d.open=false});
location.hash=link.getAttribute('href');openTarget();
const opened=row.closest('details').open;
const summaryTop=document.getElementById('summary').getBoundingClientRect().top+window.scrollY;
const firstTable=document.querySelector('table').getBoundingClientRect().top+window.scrollY;
return {raw:raw,visible:visible,count:count,ratios:ratios,row:row.cells[0].textContent,opened:opened,
 summaryFirst:summaryTop<firstTable};
"""


def test_ab_page_reads_clean_opens_on_its_summary_and_its_tables_work(tmp_path):
    page = tmp_path / "report.html"
    html = ab_page()
    page.write_text(html, encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "nothing fetched: the page works offline"
    found = probe(page, then=ACTIONS)
    no_label_overlaps(found, plots=1)  # one page, one Chromium: the A/B's layout checked here too
    extra = found["extra"]
    assert extra["summaryFirst"]
    assert extra["raw"] == AB_SHAPES * 2 * AB_RUNS, "opened, the perf rows' table holds every row"
    assert extra["visible"] == 1 and extra["count"] == "1 rows", extra
    assert extra["ratios"] == sorted(extra["ratios"]) and len(extra["ratios"]) == AB_SHAPES
    assert extra["row"] == "REGRESSED" and extra["opened"], "the link lands on the regression's row, opened"
