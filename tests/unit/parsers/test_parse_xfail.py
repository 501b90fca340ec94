"""An inner pytest run's expected failures (xfail) are called xfailed, never skipped."""

from __future__ import annotations

from pytest_gpuverify.config.targets import PYTEST
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.result import ParseContext

TERMINAL = """\
tests/test_k.py::test_ok PASSED
tests/test_k.py::test_known_bug XFAIL (tracked upstream)
tests/test_k.py::test_skip SKIPPED (no fp4 here)
=========================== short test summary info ============================
XFAIL tests/test_k.py::test_known_bug - tracked upstream
=================== 1 passed, 1 skipped, 1 xfailed in 0.12s ====================
"""

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_k" name="test_ok" time="0.01"/>
<testcase classname="tests.test_k" name="test_known_bug" time="0.01"><skipped type="pytest.xfail" message="tracked upstream"/></testcase>
<testcase classname="tests.test_k" name="test_skip" time="0.0"><skipped type="pytest.skip" message="no fp4 here">x</skipped></testcase>
</testsuite></testsuites>
"""


def _words(parsed) -> str:
    return " | ".join(parsed.notes + parsed.problems + parsed.failures)


def test_xfailed_is_not_called_skipped_from_the_terminal(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(TERMINAL)
    said = _words(parse_output(PYTEST, log))
    assert "skipped 1 test(s)" in said and "1 test(s) of the inner pytest failed as expected (xfailed)" in said, said


def test_xfailed_is_not_called_skipped_from_the_junit_xml(tmp_path):
    log, xml = tmp_path / "run.log", tmp_path / "run.xml"
    log.write_text(TERMINAL)
    xml.write_text(JUNIT)
    parsed = parse_output(PYTEST, log, ParseContext(junit_xml=xml))
    said = _words(parsed)
    assert "skipped 1 test(s)" in said and "1 test(s) of the inner pytest failed as expected (xfailed)" in said, said
    assert parsed.correctness.passed is True


def test_a_run_of_only_xfails_ran_no_test_and_says_xfailed(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("tests/test_k.py::test_known_bug XFAIL\n============ 2 xfailed in 0.12s ============\n")
    said = _words(parse_output(PYTEST, log))
    assert "the inner pytest ran no test (0 skipped, 2 xfailed)" in said, said
