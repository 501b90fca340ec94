"""``gpuverify pr-comment``'s markdown seen as a reviewer sees it: rendered as GitHub renders a comment (a
CommonMark renderer with GitHub's tables, raw HTML kept for ``<details>``), opened in headless Chromium, and
measured there: every one of the 60 regressions is a row of a rendered table, laid out and unclipped, the
ones past a screenful folded into a closed section that opens. ``GPUVERIFY_SCREENSHOTS=docs/img`` keeps the
screenshot the docs show."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import markdown_it
import pytest
from pr_comment_cases import SLOWER, two_hundred_rows
from screenshots import png_pixels, rendered_dom, screenshot

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.reporting.pr_comment import SCREENFUL

# GitHub's look, near enough: its font, table borders and padding
STYLE = """body { font: 14px -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; max-width: 1150px }
table { border-collapse: collapse; margin: 8px 0 } th, td { border: 1px solid #d0d7de; padding: 6px 13px }
tr:nth-child(2n) { background: #f6f8fa } details summary { cursor: pointer; color: #0969da }"""

# What a reader would see, measured by the browser itself: each regression row's box, whether its cells'
# text fits them, and the folded rows' state before and after their section is opened.
MEASURE = """<script>
const heading = [...document.querySelectorAll('h3')].find(h => h.textContent.startsWith('Regressions'));
const inSection = [];
for (let n = heading.nextElementSibling; n && n.tagName !== 'H3'; n = n.nextElementSibling) inSection.push(n);
const rows = inSection.flatMap(n => [...n.querySelectorAll('tbody tr')]);
const shown = el => el.checkVisibility() && el.getBoundingClientRect().height > 0;
const before = rows.map(shown);
const folds = inSection.filter(n => n.tagName === 'DETAILS');
const closed = folds.map(d => !d.open);
folds.forEach(d => d.open = true);
const cells = rows.map(r => [...r.cells].map(c => ({text: c.innerText.trim(), fits: c.scrollWidth <= c.clientWidth + 1,
  px: parseFloat(getComputedStyle(c).fontSize)})));
const out = {tables: document.querySelectorAll('table').length, rows: cells, before, closed,
  after: rows.map(shown), pipes: document.body.innerText.includes('|---|'),
  summaries: folds.map(d => d.querySelector('summary').innerText)};
folds.forEach(d => d.open = false);
const pre = document.createElement('script'); pre.type = 'application/json'; pre.id = 'measured';
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
</script>"""


def page_of(markdown: str, path: Path, measure: bool) -> Path:
    renderer = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    body = renderer.render(markdown)
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>{body}"
        + (MEASURE if measure else "")
        + "</body></html>",
        encoding="utf-8",
    )
    return path


@pytest.mark.chromium
def test_every_regression_of_the_comment_is_a_readable_table_row_in_a_browser(tmp_path):
    comment = tmp_path / "comment.md"
    compare = two_hundred_rows(tmp_path / "compare.json")
    assert main(["pr-comment", str(compare), "-o", str(comment), "--artifact-url-base", "https://ci.example/9"]) == 0
    dom = rendered_dom(page_of(comment.read_text(), tmp_path / "measured.html", measure=True))
    found = re.search(r'<script type="application/json" id="measured">(.*?)</script>', dom, re.S)
    assert found, dom[-2000:]
    seen = json.loads(found.group(1))
    assert not seen["pipes"]  # no table left as literal markdown
    assert seen["tables"] == 3  # the regressions' screenful and their folded rest; the 20 improvements
    rows = seen["rows"]
    assert sorted(int(re.fullmatch(r"M=(\d+) / us", r[1]["text"]).group(1)) for r in rows) == list(range(SLOWER))
    assert all(len(r) == 7 and r[0]["text"] == "gemm" and r[6]["text"] == "bench_gemm.json" for r in rows)
    assert all(re.fullmatch(r"1\.3\d\d \[1\.\d{3}, 1\.\d{3}\]", r[3]["text"]) for r in rows), rows[0]
    assert all(c["fits"] and c["px"] >= 12 for r in rows for c in r), [c for r in rows for c in r if not c["fits"]][:3]
    # a screenful laid out at once; the other 40 in a closed section, laid out once it is opened
    assert seen["before"] == [True] * SCREENFUL + [False] * (SLOWER - SCREENFUL)
    assert seen["closed"] == [True] and seen["summaries"] == [f"{SLOWER - SCREENFUL} more (regressions)"]
    assert seen["after"] == [True] * SLOWER
    # the page as a reviewer first sees it, kept for the docs
    shot = tmp_path / "pr-comment.png"
    screenshot(page_of(comment.read_text(), tmp_path / "page.html", measure=False), shot, (1200, 1500))
    pixels = png_pixels(shot)
    border = sum(all(abs(x - y) < 12 for x, y in zip(p, (0xD0, 0xD7, 0xDE))) for p in pixels)  # table rules
    assert border > 5000, border
    if os.environ.get("GPUVERIFY_SCREENSHOTS"):  # docs/img/pr-comment.png is this screenshot
        (Path(os.environ["GPUVERIFY_SCREENSHOTS"]) / shot.name).write_bytes(shot.read_bytes())
