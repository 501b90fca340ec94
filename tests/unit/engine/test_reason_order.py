"""A FAIL leads with what failed: 10 real pytest sessions of the lab suite (tests/data/lab_suite: failing
tests, a failed check printed by a passing test, 12 NaN lines, pytest's progress tokens), each in another
order and with other flags, read and decided as the engine does. Each time the first reason is a failing
test or the failed check, no reason repeats, the NaN lines are one reason with their count, and no
progress token is a reason."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import PYTEST
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

LAB = Path(__file__).parents[2] / "data" / "lab_suite"
# pytest's plugins are not loaded (the session starts in a fraction of the time); xdist by name where used
FLAGS = (["-v"], ["-v", "-s"], ["-p", "xdist", "-v", "-n", "2"], ["-rA"], ["-v", "-rA", "JUNIT"])
FAILING = re.compile(r"^tests/test_kernels\.py::test_gemm_nan\[\d+\] failed: |^line \d+: .*softmax M=64: FAILED")
PROGRESS = re.compile(r"\[\s*\d+%\]|\[gw\d+\]")


def session(tmp_path: Path, seed: int, flags: list[str]) -> tuple[str, list[str], str]:
    lab = tmp_path / "lab"
    shutil.copytree(LAB, lab)
    junit = tmp_path / "junit.xml"
    args = [f"--junitxml={junit}" if f == "JUNIT" else f for f in flags]
    env = {**os.environ, "LAB_SEED": str(seed), "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=lab,
        env=env,
        capture_output=True,
        timeout=120,
    )
    out = tmp_path / "out.txt"
    out.write_bytes(proc.stdout + proc.stderr)
    assert b"rootdir: " + str(lab).encode() in proc.stdout  # the lab suite is its own pytest root
    context = ParseContext(exit_code=proc.returncode, junit_xml=junit if junit.exists() else None)
    parsed = parse_output(PYTEST, out, context)
    verdict, reasons = verdict_and_reasons(
        RunRecord(ran=True, exit_code=proc.returncode), parsed, None, TargetRecord(name="lab", kind=PYTEST)
    )
    return verdict, reasons, out.read_text()


@pytest.mark.parametrize("seed", range(10))
def test_a_fail_leads_with_a_failing_test_or_check_in_every_session(tmp_path: Path, seed: int) -> None:
    verdict, reasons, printed = session(tmp_path, seed, FLAGS[seed % len(FLAGS)])
    assert verdict == "FAIL", reasons
    assert FAILING.search(reasons[0]), reasons
    assert len(reasons) == len(set(reasons)), reasons
    assert not [r for r in reasons if PROGRESS.search(r)], reasons
    nan = [r for r in reasons if "NaN/inf" in r]
    assert nan == [r for r in nan if r.startswith("NaN/inf in the printed result: 12 lines; the first, line ")], nan
    assert len(nan) == 1, reasons
    tests = [r for r in reasons if " failed: " in r and "test_gemm_nan" in r]
    assert len(tests) == 4, reasons
    failed_first = max(reasons.index(r) for r in tests) < reasons.index(nan[0]) < reasons.index("exit code 1")
    assert failed_first, reasons
    if "softmax M=64: FAILED" in printed:  # a passing test's output shows with -s and -rA only
        assert any("softmax M=64: FAILED" in r for r in reasons), reasons
