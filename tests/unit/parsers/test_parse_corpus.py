"""The reader against the real outputs saved in ``tests/data/samples/aiter/``.

Each sample starts with a ``# SOURCE:`` line saying where it comes from and what it shows; the
expectations below restate what that header says. A new sample without an entry fails the test,
so that someone decides what it should parse to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "aiter"


@dataclass(frozen=True)
class Expected:
    passed: bool | None  # correctness.passed
    elided_problem: bool = False  # a problem says the table was elided
    min_perf_rows: int = 0
    min_checks: int = 0
    shapes_checked: int | None = None


EXPECTED: dict[str, Expected] = {
    # "checkAllclose failed" (issue title) — the failed! marker after a [perf] msg
    "aiter_issue455_moe_blockscale_failed_startup.txt": Expected(passed=False, min_perf_rows=1, min_checks=1),
    # the two lines checkAllclose logs when the mismatch ratio is above tolerance
    "aiter_issue5030_rfc_checkallclose_failed_lines.txt": Expected(passed=False, min_checks=1),
    # "after fix": the visible err column is ~0, but middle columns are elided
    "aiter_pr1258_gemm_a8w8_pandas_summary_after_fix.txt": Expected(
        passed=True, elided_problem=True, min_perf_rows=8, shapes_checked=8
    ),
    # rows with elided columns, header not captured: nothing readable, and it says so
    "aiter_pr1528_gemm_a8w8_pandas_summary_elided_cols.txt": Expected(passed=None, elided_problem=True),
    # err ~0.97: "a FAILING run that still exits 0"
    "aiter_pr2438_moe_2stage_markdown_high_err.txt": Expected(passed=False, min_perf_rows=3, shapes_checked=3),
    # a PR-local FlyDSL test printing its own "--> PASS": a verdict line (printout.py): the one shape the excerpt shows whole
    "aiter_pr2560_flydsl_rmsnorm_custom_test_output.txt": Expected(passed=True, shapes_checked=1),
    # markdown timings of four backends, no err column
    "aiter_pr3747_rmsnorm_backends_markdown.txt": Expected(passed=None, min_perf_rows=36),
    "committed_log_test_gemm_a8w8_skinny.txt": Expected(passed=True, min_perf_rows=4, min_checks=2, shapes_checked=2),
    "committed_log_test_gemm_skinny_many_shapes_excerpt.txt": Expected(
        passed=True, min_perf_rows=38, min_checks=19, shapes_checked=19
    ),
    "committed_log_test_gemm_skinny_passed_small.txt": Expected(
        passed=True, min_perf_rows=4, min_checks=2, shapes_checked=2
    ),
    # start-up only (JIT build, calling test_gemm(...)): no result printed yet
    "docs_nonroot_test_gemm_a8w8_blockscale_startup.txt": Expected(passed=None),
    "rocm_contest_readme_gemm_a8w8_blockscale_perf_passed.txt": Expected(
        passed=True, min_perf_rows=10, min_checks=5, shapes_checked=5
    ),
    # "checkAllclose FAILED block" with a/b/delta tensors
    "vllm_pr16418_moe_tkw1_checkallclose_failed.txt": Expected(passed=False, min_perf_rows=2, min_checks=1),
}

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def sample_files() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.iterdir() if p.is_file())


def without_source_header(sample: Path, tmp_path: Path) -> Path:
    data = sample.read_bytes()
    assert data.startswith(b"# SOURCE:"), f"{sample.name} has no '# SOURCE:' first line"
    body = data.split(b"\n", 1)[1] if b"\n" in data else b""
    copy = tmp_path / sample.name
    copy.write_bytes(body)
    return copy


def test_every_sample_has_an_expectation() -> None:
    files = sample_files()
    if not files:
        pytest.fail(f"no samples at {SAMPLES}" + " (tests/data/samples is part of the checkout)")
    unknown = sorted({p.name for p in files} - set(EXPECTED))
    assert not unknown, f"new aiter samples without an entry in EXPECTED (tests/test_parse_corpus.py): {unknown}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_parses_as_its_header_says(name: str, tmp_path: Path) -> None:
    sample = SAMPLES / name
    if not sample.is_file():
        pytest.fail(f"sample {name} not present under {SAMPLES}" + " (tests/data/samples is part of the checkout)")
    expected = EXPECTED[name]
    copy = without_source_header(sample, tmp_path)
    result = parse_output(AITER_OP_TEST, copy)

    assert result.correctness.passed is expected.passed, (result.failures, result.problems)
    elided = [p for p in result.problems if "elided" in p]
    assert bool(elided) is expected.elided_problem, result.problems
    assert not [p for p in result.problems if "parser error" in p]
    assert len(result.perf) >= expected.min_perf_rows
    assert len(result.checks) >= expected.min_checks
    if expected.shapes_checked is not None:
        assert result.correctness.shapes_checked == expected.shapes_checked
    if expected.passed is False:
        assert result.failures and all(f.startswith("line ") for f in result.failures)

    # every time kept is a number printed on the line it names, exactly as printed
    lines = copy.read_text(encoding="utf-8", errors="replace").splitlines()
    for row in result.perf:
        assert row.source_line is not None
        printed = {float(t) for t in _NUMBER.findall(lines[row.source_line - 1])}
        assert row.us_median is None or row.us_median in printed, (row, lines[row.source_line - 1])


def test_markdown_rmsnorm_sample_rows_equal_the_printed_cells(tmp_path: Path) -> None:
    sample = SAMPLES / "aiter_pr3747_rmsnorm_backends_markdown.txt"
    if not sample.is_file():
        pytest.fail(f"sample not present under {SAMPLES}" + " (tests/data/samples is part of the checkout)")
    copy = without_source_header(sample, tmp_path)
    result = parse_output(AITER_OP_TEST, copy)
    lines = copy.read_text(encoding="utf-8").splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    expected = []
    for lineno, line in enumerate(lines[2:], start=3):
        cells = [c.strip() for c in line.strip("|").split("|")]
        shape = f"m={cells[0]}, n={cells[1]}, dtype={cells[2]}, op={cells[3]}"
        expected += [(lineno, header[i], shape, float(cells[i])) for i in range(4, 8)]
    assert [(r.source_line, r.name, r.shape, r.us_median) for r in result.perf] == expected
    assert result.correctness.passed is None


# ----- FlyDSL and Triton samples: each read by the parser of the target kind that prints it ------

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, TRITON_PYTEST  # noqa: E402
from pytest_gpuverify.parsers import NO_RESULT, parse_output  # noqa: E402

DATA_SAMPLES = SAMPLES.parent


@dataclass(frozen=True)
class KindExpected:
    kind: str
    passed: bool | None
    perf_rows: int
    truncated: bool = False  # a problem says a table was cut short
    problems: tuple[str, ...] | None = None  # the exact problems, where the header implies them
    sides: frozenset[str] = frozenset()
    max_abs_error: float | None = None


KIND_EXPECTED: dict[str, KindExpected] = {
    # "author's CONDENSED summary (not raw output)": no printed format to read, no pytest result
    "flydsl/flydsl_issue655_layernorm_bench_variants.txt": KindExpected(FLYDSL_PYTEST, None, 1, problems=(NO_RESULT,)),
    # the CI bench log: op/shape/dtype TB/s TFLOPS tables, current-vs-base blocks, the Perf Compare rows
    "flydsl/flydsl_parse_bench_fixture_ci_log_format.txt": KindExpected(
        BENCH, None, 14, problems=(), sides=frozenset({"main", "current", "v0.2.0"})
    ),
    # "Excerpt truncated where the copy ended": the rows that are there, nothing to check correctness by
    "flydsl/flydsl_pr540_moe_sorting_bench_table.txt": KindExpected(BENCH, None, 9 * 3, problems=()),
    "flydsl/flydsl_pr848_norm_perf_compare.txt": KindExpected(BENCH, None, 14 * 3, problems=()),
    # perf_report, 15 rows x 2 line columns (fc1, fc2), full to_string form
    "triton/aiter_pr650_bench_gemm_afp4wfp4_model.txt": KindExpected(BENCH, None, 15 * 2, problems=()),
    # "older triton printed print(df) so pandas truncated rows": 10 visible rows x 3 line columns
    "triton/intel_issue544_softmax_perf_report_truncated.txt": KindExpected(BENCH, None, 10 * 3, truncated=True),
    # "pytest failure of a Triton test ... Tensor-likes are not close!" (an excerpt: no summary line)
    "triton/intel_issue5428_assert_close_failure.txt": KindExpected(
        TRITON_PYTEST, False, 0, problems=(NO_RESULT,), max_abs_error=54.87181854248047
    ),
}


def kind_sample_files() -> list[str]:
    found = []
    for sub in ("flydsl", "triton"):
        folder = DATA_SAMPLES / sub
        if folder.is_dir():
            found += [f"{sub}/{p.name}" for p in sorted(folder.iterdir()) if p.is_file()]
    return found


def test_every_flydsl_and_triton_sample_has_an_expectation() -> None:
    files = kind_sample_files()
    if not files:
        pytest.fail(f"no samples under {DATA_SAMPLES}" + " (tests/data/samples is part of the checkout)")
    unknown = sorted(set(files) - set(KIND_EXPECTED))
    assert not unknown, f"new samples without an entry in KIND_EXPECTED (tests/test_parse_corpus.py): {unknown}"


@pytest.mark.parametrize("name", sorted(KIND_EXPECTED))
def test_flydsl_and_triton_samples_parse_as_their_header_says(name: str, tmp_path: Path) -> None:
    sample = DATA_SAMPLES / name
    if not sample.is_file():
        pytest.fail(f"sample {name} not present under {DATA_SAMPLES}" + " (tests/data/samples is part of the checkout)")
    expected = KIND_EXPECTED[name]
    copy = without_source_header(sample, tmp_path)
    result = parse_output(expected.kind, copy)

    assert result.correctness.passed is expected.passed, (result.failures, result.problems)
    assert len(result.perf) == expected.perf_rows, [r.model_dump(exclude_none=True) for r in result.perf]
    assert bool([p for p in result.problems if "cut short" in p]) is expected.truncated, result.problems
    if expected.problems is not None:
        assert tuple(result.problems) == expected.problems
    assert {r.side for r in result.perf if r.side} == set(expected.sides)
    if expected.max_abs_error is not None:
        assert result.correctness.max_abs_error == expected.max_abs_error
    if expected.passed is False:
        assert result.failures
    else:
        assert not result.failures

    # every number kept is one printed on the line it names (thousands separators and x/% aside)
    lines = copy.read_text(encoding="utf-8", errors="replace").splitlines()
    for row in result.perf:
        assert row.source_line is not None
        printed = {float(t) for t in _NUMBER.findall(lines[row.source_line - 1].replace(",", ""))}
        for value in [row.us_median, *row.metrics.values()]:
            assert value is None or value in printed, (row, lines[row.source_line - 1])


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.passed and not e.elided_problem))
def test_passing_samples_raise_no_alarm(name: str, tmp_path: Path) -> None:
    """Error lines and unread words make a run INCONCLUSIVE; the real passing outputs print
    none (their ``may cause errors`` warning is prose), so they stay free of problems."""
    sample = SAMPLES / name
    if not sample.is_file():
        pytest.fail(f"sample {name} not present under {SAMPLES}" + " (tests/data/samples is part of the checkout)")
    result = parse_output(AITER_OP_TEST, without_source_header(sample, tmp_path))
    assert result.problems == [] and result.correctness.passed is True
