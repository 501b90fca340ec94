"""Markup a kernel printed stays text in every markdown and HTML page the product writes: the CI summary
(``--gpu-ci-summary`` and GitHub's step summary), the PR comment, the issue body, compare's
``--markdown`` and the HTML report. Each markdown is rendered by a real renderer (Python-Markdown with
tables); the page must hold only the product's own elements, and the printed text must read as printed."""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import markdown as markdown_lib
import pytest
from compare_artifacts import artifact

from pytest_gpuverify.common import markdown as md
from pytest_gpuverify.compare import render as compare_render
from pytest_gpuverify.compare.command import decide
from pytest_gpuverify.records.artifact import Artifact, PerfRow, RepoRecord
from pytest_gpuverify.reporting import ci_summary, html_report, pr_comment

PRINTED = [
    '<img src=x onerror="alert(1)">',
    '<a href="https://evil.example/">click</a>',
    "<script>alert(2)</script>",
    "]]><x>",
    "a `code` span and ``two``",
    "[link](javascript:alert(3)) ![pic](https://evil.example/p.png)",
    "*bold* | cell ~~gone~~ &amp;",
]
# what a markdown page may hold: the product's own elements (an ``a`` only where a link is ours)
OWN = {"h2", "h3", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "strong", "code"}
# what the printed text would add to the HTML report (its own elements change with its plots)
FOREIGN = {"img", "script", "x", "a"}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def elements(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser


def assert_inert(html: str, printed: list[str], links_to: str | None = None, markdown: bool = True) -> None:
    page = elements(html)
    for tag, attrs in page.tags:
        ours = tag == "a" and links_to is not None and str(attrs.get("href", "")).startswith(links_to)
        assert ours or (tag in OWN if markdown else tag not in FOREIGN), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "javascript:" not in str(attrs.get("href", "")) and "evil" not in str(attrs.get("src", ""))
    shown = " ".join(page.text)
    for each in printed:  # the words as printed, markdown's escapes read back by the renderer
        for word in ("onerror", "alert(1)", "evil.example", "<script>", "]]>", "click", "code"):
            if word in each:
                assert word in shown, (word, shown[:2000])


def rendered(text: str) -> str:
    """GitHub reads the markdown inside ``<details>``; Python-Markdown passes such a block through raw, so
    the product's own fold lines are dropped first (what the fold holds is then rendered as markdown)."""
    lines = [line for line in text.splitlines() if not line.startswith(("<details>", "</details>"))]
    return markdown_lib.markdown("\n".join(lines), extensions=["tables"])


def props(reason: str, nodeid_tail: str) -> dict[str, str]:
    return {
        "gpuverify_verdict": "FAIL",
        "gpuverify_reason": reason,
        "gpuverify_artifact": f"/t/bench_{nodeid_tail}.json",
        "gpuverify_gpus": "0",
        "gpuverify_host": reason[:20],
        "gpuverify_perf_x": reason,
    }


@pytest.mark.parametrize("printed", PRINTED)
def test_the_ci_summary_and_the_step_summary_keep_printed_markup_as_text(printed: str, tmp_path: Path) -> None:
    verdicts = [
        (f"t.py::test[{printed}]", props(printed, "a")),
        ("t.py::ok", {**props(printed, "b"), "gpuverify_verdict": "PASS"}),
    ]
    mine, step = tmp_path / "mine.md", tmp_path / "step.md"
    ci_summary.publish(
        verdicts,
        summary_path=str(mine),
        environ={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)},
        stream=io.StringIO(),
    )
    for written in (mine.read_text(), step.read_text()):
        html = rendered(written)
        assert_inert(html, [printed])
        assert html.count("<tr>") == 1 + 1 + 1 + 1  # the two tables' heads and one row each: no cell split


def _compare_json(tmp_path: Path, printed: str) -> Path:
    def side(factor: float, sha: str) -> Artifact:
        rows = [
            PerfRow(shape=f"M={s} {printed}", name=printed, us_median=100.0 * factor * (1 + 0.001 * r), run=r + 1)
            for s in range(3)
            for r in range(5)
        ]
        return artifact([1.0], perf=rows, repos=[RepoRecord(path="/r", sha=sha)])

    result = decide(side(1.0, "a" * 40), side(1.5, "b" * 40))
    result.target = f"t[{printed}]"
    result.artifacts = {"base": f"main/{printed}.json", "head": f"pr/{printed}.json"}
    doc = json.loads(compare_render.as_json(result))
    for pair in doc["pairs"]:
        pair["confirmed"] = True
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("printed", PRINTED)
def test_the_pr_comment_and_the_issue_body_keep_printed_markup_as_text(printed: str, tmp_path: Path) -> None:
    doc = pr_comment.load(_compare_json(tmp_path, printed))
    assert [p.call for p in doc.pairs].count("REGRESSED") == 3
    for url_base in (None, "https://ci.example/art"):
        comment = pr_comment.pr_comment([doc], url_base)
        assert_inert(rendered(comment), [printed], links_to=url_base)
        body = pr_comment.issue_body([doc], url_base)
        assert body is not None
        assert_inert(rendered(body.split("\n", 2)[2]), [printed], links_to=url_base)


@pytest.mark.parametrize("printed", PRINTED)
def test_compares_markdown_keeps_printed_markup_as_text(printed: str, tmp_path: Path) -> None:
    doc = json.loads(_compare_json(tmp_path, printed).read_text())
    assert doc["pairs"]
    rows = [PerfRow(shape=printed, name=printed, us_median=10.0 + r, run=r + 1) for r in range(5)]
    result = decide(
        artifact([1.0], perf=rows),
        artifact([1.0], perf=[r.model_copy(update={"us_median": r.us_median * 2}) for r in rows]),
    )
    html = rendered(compare_render.markdown(result))
    assert_inert(html, [printed])
    assert html.count("<tr>") == 2  # the head and the one row: a printed pipe split no cell


def test_the_html_report_escapes_printed_markup() -> None:
    art = Artifact(
        topic="t",
        ts="2026-12-01T10:00:00Z",
        verdict="FAIL",
        host="<b>h</b>",
        perf=[PerfRow(shape=p, name=p, us_median=10.0) for p in PRINTED],
        reasons=list(PRINTED),
    )
    page = html_report.render([(Path("/t/bench_t.json"), art)], list(PRINTED))
    # the page's own scripts: its sorting and filtering code, and rows kept as JSON data (no "<" in them)
    data = re.compile(r'<script type="application/json" id="[\w-]+">(.*?)</script>', re.S)
    assert all("<" not in block for block in data.findall(page))
    text = data.sub("", page.replace(html_report.SCRIPT, ""))
    assert_inert(text, PRINTED, links_to="#", markdown=False)  # its own links: to its sections
    assert "<script" not in text and "]]><x>" not in page


def test_code_spans_hold_any_run_of_backticks() -> None:
    for value in ("a`b", "``x``", "`edge", "plain", "a|b"):
        html = rendered(md.code(value, in_table=False))
        assert elements(html).tags == [("p", {}), ("code", {})], html
        assert "".join(elements(html).text).strip() == value.strip()
