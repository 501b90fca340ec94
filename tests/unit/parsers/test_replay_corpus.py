"""Real console outputs, replayed byte for byte (tests/data/printouts/: each with its source, the
verdict it proves and the perf figures it printed): no false PASS on any, the proven verdict on at
least 90% of them, and at least 90% of the printed figures in perf rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay import cases, figure_found, output_of, replay, values

CASES = cases()
VERDICT_RATE = 0.90
FIGURE_RATE = 0.90


def test_the_corpus_is_whole() -> None:
    assert len(CASES) >= 50
    for case in CASES:
        assert case.path.is_file(), case.file
        assert case.path.read_bytes().startswith(b"# SOURCE: "), f"{case.file}: no source header"
        assert case.verdict in ("PASS", "FAIL", "INCONCLUSIVE"), case.file
        assert output_of(case).strip(), case.file
    files = {p.name for p in CASES[0].path.parent.glob("*.txt")}
    assert files == {c.file for c in CASES}, "every output has its case, every case its output"


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_no_output_is_a_false_pass(case, tmp_path: Path) -> None:
    verdict, reasons, _ = replay(case, tmp_path)
    assert verdict != "PASS" or case.verdict == "PASS", (case.why, reasons)


def test_the_verdicts_and_the_figures_as_the_outputs_prove(tmp_path: Path) -> None:
    wrong, figures, found, missing = [], 0, 0, []
    for case in CASES:
        verdict, reasons, parsed = replay(case, tmp_path)
        if verdict != case.verdict:
            wrong.append(f"{case.file}: {verdict}, proves {case.verdict}: {reasons[:2]}")
        held = values(parsed)
        figures += len(case.figures)
        for figure in case.figures:
            if figure_found(figure, held):
                found += 1
            else:
                missing.append(f"{case.file}: {figure}")
    assert 1 - len(wrong) / len(CASES) >= VERDICT_RATE, wrong
    assert found / figures >= FIGURE_RATE, missing
