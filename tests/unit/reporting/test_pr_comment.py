"""``gpuverify pr-comment`` and ``issue-body`` from compare's own output: two artifacts of 200 shapes
called by compare's rule (``decide``) and written by its ``--json`` renderer, then read back through the
command as a CI step runs it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pr_comment_cases import BASE_SHA, FASTER, HEAD_SHA, SLOWER, two_hundred_rows

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.reporting.pr_comment import MARKER, SCREENFUL


@pytest.fixture
def compare_json(tmp_path):
    return two_hundred_rows(tmp_path / "compare.json")


def test_every_regression_is_listed_with_its_interval_state_and_link(compare_json, tmp_path, capsys):
    out = tmp_path / "comment.md"
    url = "https://ci.example/run/9/artifacts"
    assert main(["pr-comment", str(compare_json), "-o", str(out), "--artifact-url-base", url]) == 0
    text = out.read_text()
    assert text.splitlines()[0] == MARKER
    regressions = text.split("### Regressions (60)")[1].split("### Improvements")[0]
    rows = [line for line in regressions.splitlines() if line.startswith("| gemm |")]
    assert sorted(int(re.search(r"M=(\d+)", r).group(1)) for r in rows) == list(range(SLOWER))  # all 60, once
    assert all(re.search(r"\| 1\.3\d\d \[1\.\d{3}, 1\.\d{3}\] \| 30\.\d% \|", r) for r in rows), rows[0]
    assert all(f"[bench_gemm.json]({url}/tickets/pr-7/bench_gemm.json)" in r for r in rows)
    states = [r.split(" | ")[5] for r in rows]
    assert (states.count("confirmed"), states.count("not confirmed"), states.count("not re-measured")) == (5, 5, 50)
    assert states[:5] == ["confirmed"] * 5  # confirmed first
    # a screenful shows; the other 40 fold into <details>
    shown, folded = regressions.split("<details>")
    assert len([r for r in shown.splitlines() if r.startswith("| gemm |")]) == SCREENFUL
    assert "<summary>40 more (regressions)</summary>" in folded and "</details>" in folded
    improvements = text.split("### Improvements (20)")[1]
    assert len([r for r in improvements.splitlines() if r.startswith("| gemm |")]) == FASTER
    assert "<details>" not in improvements
    assert "200 row(s) compared: 60 regressed, 20 improved, 0 could not be told, 120 same" in text
    assert f"{BASE_SHA[:12]}..{HEAD_SHA[:12]}" in text


def test_a_path_without_a_url_is_shown_as_code(compare_json, capsys):
    assert main(["pr-comment", str(compare_json)]) == 0
    assert "| `tickets/pr-7/bench_gemm.json` |" in capsys.readouterr().out


def test_issue_body_holds_the_confirmed_regressions_only(compare_json, tmp_path):
    out = tmp_path / "issue.md"
    assert main(["issue-body", str(compare_json), "-o", str(out), "--run-url", "https://ci.example/run/9"]) == 0
    title, blank, *body = out.read_text().splitlines()
    assert title == f"Perf regression: 5 row(s) of gemm at {HEAD_SHA[:12]}" and blank == ""
    assert f"`{BASE_SHA}..{HEAD_SHA}`" in "\n".join(body) and "Run: https://ci.example/run/9" in body
    rows = [r for r in body if r.startswith("| gemm |")]
    assert len(rows) == 5 and all(" | confirmed | " in r for r in rows)


def test_no_confirmed_regression_writes_no_issue(compare_json, tmp_path, capsys):
    doc = json.loads(compare_json.read_text())
    for p in doc["pairs"]:
        p.pop("confirmed", None)
    compare_json.write_text(json.dumps(doc))
    out = tmp_path / "issue.md"
    out.write_text("stale")
    assert main(["issue-body", str(compare_json), "-o", str(out)]) == 0
    assert not out.exists()
    assert "no confirmed regression" in capsys.readouterr().err


def test_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    assert main(["pr-comment", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"gpuverify pr-comment: {bad}: not JSON") and "Fix:" in err and "\n" not in err
    bad.write_text(json.dumps({"rows": []}))
    assert main(["pr-comment", str(bad)]) == 2
    assert "not a compare's JSON (pairs" in capsys.readouterr().err


DOCS = Path(__file__).resolve().parents[3] / "docs"


def _loop_jobs() -> dict:
    """The jobs of docs/ci.md's PR-and-main-loop workflow, parsed."""
    blocks = re.findall(r"```yaml\n(.*?)```", (DOCS / "ci.md").read_text(), re.S)
    found = [b for b in blocks if b.startswith("# the PR loop")]
    assert len(found) == 1, f"docs/ci.md: {len(found)} PR-loop workflows"
    return yaml.safe_load(found[0])["jobs"]


def _expand(text: str) -> str:
    for name, value in {
        "github.run_id": "8811",
        "github.server_url": "https://github.example",
        "github.repository": "org/kernels",
    }.items():
        text = text.replace("${{ " + name + " }}", value)
    assert "${{" not in text, text
    return text


def _run_step(steps: list[dict], command: str, folder: Path) -> subprocess.CompletedProcess:
    """The step whose command starts with ``command``, run as written (gpuverify from this checkout)."""
    step = next(s for s in steps if str(s.get("run", "")).lstrip().startswith(command))
    argv = shlex.split(_expand(step["run"]))
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *argv[1:]], cwd=folder, capture_output=True, text=True
    )


def test_the_documented_pr_step_writes_the_comment_its_gh_step_finds(compare_json, tmp_path):
    steps = _loop_jobs()["pr-comment"]["steps"]
    assert compare_json == tmp_path / "compare.json"  # where the documented step reads it
    proc = _run_step(steps, "gpuverify pr-comment", tmp_path)
    assert proc.returncode == 0, proc.stderr
    comment = (tmp_path / "comment.md").read_text()
    assert comment.startswith(MARKER + "\n")
    assert "(https://github.example/org/kernels/actions/runs/8811/tickets/pr-7/bench_gemm.json)" in comment
    gh = next(s for s in steps if "gh api" in str(s.get("run", "")))["run"]
    assert "-F body=@comment.md" in gh and "-X PATCH" in gh
    # the step's own jq filter, on a page of comments as GitHub lists them: it picks ours, not a quote of it
    jq = re.search(r"--jq '([^']*)'", gh).group(1)
    page = [
        {"id": 1, "body": "LGTM"},
        {"id": 2, "body": "> " + MARKER + " quoted"},
        {"id": 3, "body": comment},
        {"id": 4, "body": comment},
    ]
    found = subprocess.run(["jq", "-r", jq], input=json.dumps(page), capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "3"
    none = subprocess.run(["jq", "-r", jq], input=json.dumps(page[:2]), capture_output=True, text=True, check=True)
    assert none.stdout.strip() == ""  # no comment yet: the step posts a new one


def test_the_documented_main_step_writes_the_issue_its_gh_step_files(compare_json, tmp_path):
    steps = _loop_jobs()["main-issue"]["steps"]
    assert compare_json == tmp_path / "compare.json"  # where the documented step reads it
    proc = _run_step(steps, "gpuverify issue-body", tmp_path)
    assert proc.returncode == 0, proc.stderr
    issue = (tmp_path / "issue.md").read_text()
    assert issue.startswith("Perf regression: 5 row(s) of gemm")
    assert "Run: https://github.example/org/kernels/actions/runs/8811" in issue
    filing = next(s for s in steps if "gh issue create" in str(s.get("run", "")))["run"]
    assert "[ -f issue.md ]" in filing and "head -n 1 issue.md" in filing and "tail -n +3 issue.md" in filing
