"""pytest's own progress tokens (``FAILED [ 25%]``, xdist's ``[gw0] [ 25%] FAILED id``, ``-v -s``'s word
alone after a test's output) are no reasons: the test's outcome is counted once, from JUnit or the
summary. A test that prints ``FAILED`` alone and passes is still a failure. A run that ran no test says
so once. Each output is read with the prefilter on (each engine) and off, which must agree."""

from __future__ import annotations

import pytest
from parse_cases import read_agreeing, verdict_of

from pytest_gpuverify.config.targets import PYTEST

pytestmark = pytest.mark.usefixtures("engine")

SUMMARY = """\
=========================== short test summary info ============================
FAILED tests/t.py::test_a[1] - AssertionError: bad
==================== 1 failed, 1 passed in 0.10s ====================
"""

XDIST = (
    """\
============================= test session starts ==============================
created: 2/2 workers
2 workers [2 items]

[gw0] [ 50%] FAILED tests/t.py::test_a[1]\x20
[gw1] [100%] PASSED tests/t.py::test_a[2]\x20
"""
    + SUMMARY
)

VERBOSE = (
    """\
============================= test session starts ==============================
collected 2 items

tests/t.py::test_a[1] FAILED                                              [ 50%]
tests/t.py::test_a[2] shape M=2: y diff 0.0 PASSED                        [100%]
"""
    + SUMMARY
)

SILENT = (
    """\
============================= test session starts ==============================
collected 2 items

tests/t.py::test_a[1] shape M=1: y diff 0.5
FAILED
tests/t.py::test_a[2] shape M=2: y diff 0.0
PASSED
"""
    + SUMMARY
)


@pytest.mark.parametrize("printed", [XDIST, VERBOSE, SILENT], ids=["xdist", "verbose", "silent"])
def test_progress_tokens_are_no_reasons(printed: str) -> None:
    parsed = read_agreeing(printed, PYTEST, exit_code=1)
    verdict, reasons = verdict_of(parsed, PYTEST, exit_code=1)
    assert verdict == "FAIL"
    assert reasons == ["tests/t.py::test_a[1] failed: AssertionError: bad", "exit code 1"]


def test_a_test_that_prints_failed_alone_and_passes_still_fails() -> None:
    printed = SILENT.replace("shape M=2: y diff 0.0\nPASSED", "shape M=2: y diff 0.0\nFAILED\nPASSED")
    parsed = read_agreeing(printed, PYTEST, exit_code=1)
    verdict, reasons = verdict_of(parsed, PYTEST, exit_code=1)
    assert verdict == "FAIL"
    assert any("tests/t.py::test_a[2] printed FAILED alone" in r for r in reasons), reasons


def test_a_run_that_ran_no_test_says_so_once() -> None:
    printed = (
        "ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]\n"
        "__main__.py: error: unrecognized arguments: --bogus\n"
        "  inifile: /tmp/lab/pytest.ini\n  rootdir: /tmp/lab\n"
    )
    parsed = read_agreeing(printed, PYTEST, noise=None, exit_code=4)
    verdict, reasons = verdict_of(parsed, PYTEST, exit_code=4)
    assert verdict == "INCONCLUSIVE"
    assert reasons[0] == (
        "the inner pytest ran no test (exit code 4): line 2: __main__.py: error: unrecognized arguments: --bogus"
    )
    assert sum("--bogus" in r for r in reasons) == 1 and sum("ran no test" in r for r in reasons) == 1, reasons
