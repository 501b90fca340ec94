"""Erase-line and first-column escapes read as the ``\\r`` a terminal acts on: each piece a terminal
shows is read, and the words on either side of one are never glued together. Each output is read with
the prefilter on (each engine) and off, which must agree."""

from __future__ import annotations

import pytest
from parse_cases import read_agreeing

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH
from pytest_gpuverify.parsers.reading.lines import strip_ansi

pytestmark = pytest.mark.usefixtures("engine")

ERASES = ["\x1b[2K\x1b[0G", "\x1b[2K", "\x1b[K", "\x1b[0K", "\x1b[0G", "\x1b[G", "\x1b[1G", "\x1b[2K\x1b[1G"]


@pytest.mark.parametrize("erase", ERASES)
def test_an_erase_or_a_first_column_move_splits_the_line_as_a_carriage_return(erase: str) -> None:
    shown = strip_ansi(f"FAILED{erase}PASSED")
    assert "FAILEDPASSED" not in shown
    assert [p for p in shown.split("\r") if p] == ["FAILED", "PASSED"]


def test_colours_and_other_cursor_moves_are_only_removed() -> None:
    assert strip_ansi("\x1b[31mFAILED\x1b[0m at \x1b[5Gcol") == "FAILED at col"


@pytest.mark.parametrize("erase", ERASES)
@pytest.mark.parametrize("kind", [BENCH, AITER_OP_TEST])
def test_a_line_with_an_erase_reads_as_the_same_line_with_a_carriage_return(erase: str, kind: str) -> None:
    line = "shape M=16 N=4096: FAILED{}shape M=16 N=4096: PASSED\n"
    with_erase = read_agreeing(line.format(erase), kind, noise=None)
    with_cr = read_agreeing(line.format("\r"), kind, noise=None)
    assert with_erase.model_dump(exclude={"bytes_read"}) == with_cr.model_dump(exclude={"bytes_read"})
    assert with_erase.correctness.checks_failed == 1  # the failure a terminal showed still outranks the pass


@pytest.mark.parametrize("erase", ERASES)
def test_a_verdict_printed_over_a_progress_bar_is_read(erase: str) -> None:
    parsed = read_agreeing(f"tuning  40%|####      |{erase}shape M=16 N=4096: PASSED\n", BENCH)
    assert parsed.correctness.passed is True and parsed.correctness.checks_passed == 1
    glued = read_agreeing("tuning  40%|####      |shape M=16 N=4096: FAILEDPASSED\n", BENCH)
    assert glued.correctness.checks_passed == 0  # without the piece boundary the verdict is lost
