"""A session under GitHub Actions: job summary, annotations, JUnit properties (also under xdist)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.docker

TARGETS = {
    "op_tests/test_gemm_a8w8.py": "PASS",
    "op_tests/test_moe_2stage.py": "FAIL",
    "op_tests/test_no_check.py": "INCONCLUSIVE",
}


def junit_properties(path) -> dict:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cases[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return cases


def check_junit(path) -> None:
    cases = junit_properties(path)
    assert len(cases) == len(TARGETS), cases
    for props in cases.values():
        assert {
            "gpuverify_verdict",
            "gpuverify_artifact",
            "gpuverify_gpus",
            "gpuverify_host",
            "gpuverify_shapes",
        } <= set(props), props
    assert sorted(p["gpuverify_verdict"] for p in cases.values()) == sorted(TARGETS.values())
    assert any(k.startswith("gpuverify_perf_") for p in cases.values() for k in p), cases


def test_github_summary_annotations_and_junit(sandbox, tmp_path):
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    junit = tmp_path / "junit.xml"
    proc = sandbox.pytest(
        *TARGETS,
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit1",
        "--gpu-ci-summary",
        str(tmp_path / "any.md"),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)},
    )
    err = proc.stderr.decode()
    md = step.read_text()
    assert md.startswith("earlier step\n"), "appended, never overwritten"
    rows = re.findall(r"^\| \*\*(\w+)\*\* \| `([^`]+)`", md, re.M)
    assert sorted(v for v, _ in rows) == sorted(TARGETS.values()), md
    for verdict, nodeid in rows:
        assert TARGETS["op_tests/" + nodeid.split("::")[0].rsplit("op_tests/", 1)[1]] == verdict
    assert (tmp_path / "any.md").read_text() == md[len("earlier step\n") :]
    assert re.search(r"^::error file=\S*op_tests/test_moe_2stage\.py,line=1,title=.*::FAIL: ", err, re.M), err
    assert re.search(r"^::warning file=\S*op_tests/test_no_check\.py,line=1,.*::INCONCLUSIVE: ", err, re.M), err
    assert len(re.findall(r"^::(error|warning) ", err, re.M)) == 2
    check_junit(junit)


@pytest.mark.slow
def test_xdist_junit_properties_and_no_annotations_outside_github(sandbox, tmp_path):
    junit = tmp_path / "junit.xml"
    proc = sandbox.pytest(
        "-n",
        "2",
        *TARGETS,
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit1",
        env={"GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": str(tmp_path / "step.md")},
    )
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "::error" not in out and "::warning" not in out
    assert not (tmp_path / "step.md").exists()
    check_junit(junit)
