"""Nothing printed is silently dropped: error lines and
tracebacks in a run that exits 0, lines too long to keep whole, check lines and ``err`` tables in
every common layout, ``failed`` words no reader understood, NaN in a throughput cell. Each output
is read with the prefilter on (each engine) and off, which must agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from parse_cases import NOISE, read_agreeing

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH
from pytest_gpuverify.engine.verdict import decide
from pytest_gpuverify.parsers.reading import prefilter
from pytest_gpuverify.parsers.reading.hsscan import available as hsscan_available
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import RunRecord

PASSED = "[checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]"
FAILED = "[checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]"


pytestmark = pytest.mark.usefixtures("engine")


def read(text: str | bytes, kind: str = AITER_OP_TEST, noise: bool = True) -> ParsedOutput:
    """Parse with the prefilter (the output between runs of noise) and without; both must agree."""
    return read_agreeing(text, kind, noise=(20, 60) if noise else None)


def verdict(parsed: ParsedOutput) -> str:
    return decide(RunRecord(ran=True, exit_code=0), parsed)[0]


# ----- error lines in a run that exits 0 ---------------------------------------------------------

SWEEP = f"""\
shape M=16 N=4096: {PASSED}
Traceback (most recent call last):
  File "op_tests/test_gemm.py", line 88, in sweep
    run(m, n)
RuntimeError: HIP error: an illegal memory access was encountered
shape M=32 N=4096: {PASSED}
"""


@pytest.mark.parametrize("kind", [AITER_OP_TEST, BENCH])
def test_a_sweep_that_catches_a_traceback_per_shape_is_not_pass(kind: str) -> None:
    parsed = read(SWEEP, kind)
    assert parsed.correctness.passed is True  # the checks that printed did pass ...
    assert verdict(parsed) == "INCONCLUSIVE"  # ... but a shape died: nothing is proven
    quoted = [p for p in parsed.problems if "the run printed an error" in p]
    assert any("RuntimeError: HIP error: an illegal memory access was encountered" in p for p in quoted)
    assert any("Traceback (most recent call last)" in p for p in quoted)


@pytest.mark.parametrize(
    "line",
    [
        "Memory access fault by GPU node-2 (Agent handle: 0x55d0) on address 0x7f00. Reason: Unknown.",
        "Segmentation fault (core dumped)",
        "Aborted (core dumped)",
        "CUDA error: device-side assert triggered",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
        "hipErrorIllegalAddress returned by hipDeviceSynchronize",
        "Error: kernel launch failed for M=128",
        "error: no kernel image is available for execution on the device",
        "Fatal Python error: Segmentation fault",
        "ValueError",
    ],
)
def test_each_error_line_makes_a_passing_run_inconclusive_and_is_quoted(line: str) -> None:
    parsed = read(f"[aiter] ck: {PASSED}\n{line}\n")
    assert verdict(parsed) == "INCONCLUSIVE", parsed.problems
    assert any(line.strip()[:60] in p for p in parsed.problems), parsed.problems


@pytest.mark.parametrize(
    "line",
    [
        "[aiter] WARNING: NUMA balancing is enabled, which may cause errors. It is recommended to disable it",
        "max error: 0.0012 (atol=0.01)",
        "max_abs_error=2.3e-04 cosine_sim=0.9991",
        "relative error: 1e-05",
        "10 passed, 0 failed",
        "failed=0 passed=8",
        "[aiter] failed to import triton kernels, using the ck ones",
        "stderr captured: none",
        "| m | ck us | ck err |",  # a header: its table follows
    ],
)
def test_benign_lookalikes_raise_no_alarm(line: str) -> None:
    text = f"[aiter] ck: {PASSED}\n{line}\n|:--|--:|--:|\n| 16 | 3.2 | 0 |\n"
    parsed = read(text)
    assert verdict(parsed) == "PASS", parsed.problems


def test_an_unread_failed_word_is_a_problem() -> None:
    parsed = read(f"[aiter] ck: {PASSED}\nautotuning failed for config 3, retrying\n", noise=False)
    assert verdict(parsed) == "INCONCLUSIVE"
    assert parsed.problems == [
        "line 2: 'failed' printed where no check was read: autotuning failed for config 3, retrying"
    ]


def test_a_failed_word_standing_as_a_shapes_status_fails() -> None:
    parsed = read(f"[aiter] ck: {PASSED}\nshape 3: FAILED (mismatch 12%)\n")
    assert verdict(parsed) == "FAIL"
    assert any("shape 3: FAILED (mismatch 12%)" in f for f in parsed.failures)


# ----- check lines --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        "[checkAllclose atol=0.01 rtol=0.01 FAILED!]",
        "[checkAllclose rtol=0.01 atol=0.01 failed!]",
        "[checkAllclose rtol=0.01 atol=0.01 \x1b[31mFAILED!\x1b[0m]",
    ],
)
def test_check_lines_in_other_spellings_are_read(check: str) -> None:
    parsed = read(f"[aiter] ck: {PASSED}\n[aiter] triton: {check}\n")
    assert parsed.correctness.passed is False and parsed.correctness.checks_failed == 1
    assert parsed.checks[-1].atol == 0.01 and parsed.checks[-1].rtol == 0.01
    assert verdict(parsed) == "FAIL"


def test_a_check_line_that_cannot_be_read_is_a_problem() -> None:
    parsed = read(f"[aiter] ck: {PASSED}\n[aiter] triton: [checkAllclose tol=0.01 mismatch]\n")
    assert verdict(parsed) == "INCONCLUSIVE"
    assert any("[checkAllclose line that could not be read" in p for p in parsed.problems)


# ----- lines too long to keep whole ---------------------------------------------------------------


def test_a_failed_check_after_a_giant_progress_line_is_read() -> None:
    progress = "".join(f"\rtuning {i % 100:3d}%|{'#' * (i % 50):<50}|" for i in range(20_000))  # ~1.4 MB
    data = (f"[aiter] ck: {PASSED}\n" + progress + f"\r[aiter] ck: {FAILED}\n[aiter] done\n").encode()
    assert len(data) > 1 << 20
    parsed = read(data, noise=False)
    assert parsed.correctness.passed is False and verdict(parsed) == "FAIL"
    assert any("read in its \\r-separated pieces" in n for n in parsed.notes)


def test_a_giant_piece_without_a_carriage_return_is_never_a_silent_pass() -> None:
    data = (f"[aiter] ck: {PASSED}\n" + "x" * ((1 << 20) + 10) + f" ck: {FAILED}\n").encode()
    parsed = read(data, noise=False)
    assert verdict(parsed) == "INCONCLUSIVE"
    assert any("with no \\r to split it at; cut, the rest unread" in p for p in parsed.problems)


# ----- err columns in every table layout ----------------------------------------------------------

ERR_TABLES = {
    "grid": """\
+------+---------+----------+
|    m |   ck us |   ck err |
+======+=========+==========+
|   16 |    3.22 |     0    |
+------+---------+----------+
|   32 |    3.30 |     0.97 |
+------+---------+----------+""",
    "box": """\
┏━━━━━━┳━━━━━━━━━┳━━━━━━━━━━┓
┃    m ┃   ck us ┃   ck err ┃
┡━━━━━━╇━━━━━━━━━╇━━━━━━━━━━┩
│   16 │    3.22 │     0    │
│   32 │    3.30 │     0.97 │
└──────┴─────────┴──────────┘""",
    "indented markdown": """\
    |    m |   ck us |   ck err |
    |-----:|--------:|---------:|
    |   16 |    3.22 |     0    |
    |   32 |    3.30 |     0.97 |""",
    "markdown without outer pipes": """\
   m |   ck us |   ck err
-----|---------|---------
  16 |    3.22 |     0
  32 |    3.30 |     0.97""",
    "github": """\
|   m |   ck us |   ck err |
|-----|---------|----------|
|  16 |    3.22 |     0    |
|  32 |    3.30 |     0.97 |""",
    "simple": """\
  m    ck us    ck err
---  -------  --------
 16     3.22      0
 32     3.30      0.97""",
    "pandas with a title lacking 'summary'": """\
gemm results:
    m  ck us  ck err
0  16   3.22    0.00
1  32   3.30    0.97""",
}


@pytest.mark.parametrize("kind", [AITER_OP_TEST, BENCH])
@pytest.mark.parametrize("layout", sorted(ERR_TABLES))
def test_an_err_above_tolerance_fails_in_every_layout(layout: str, kind: str) -> None:
    parsed = read(f"[aiter] ck: {PASSED}\n" + ERR_TABLES[layout] + "\n[aiter] done\n", kind)
    assert parsed.correctness.passed is False, (parsed.failures, parsed.problems)
    assert any("err 0.97 > 0.05 in column 'ck err'" in f for f in parsed.failures), parsed.failures
    assert verdict(parsed) == "FAIL"


@pytest.mark.parametrize("layout", sorted(ERR_TABLES))
def test_an_err_table_alone_is_a_correctness_result(layout: str) -> None:
    text = ERR_TABLES[layout].replace("0.97", "0.01")
    parsed = read(text + "\n")
    assert parsed.correctness.passed is True and parsed.correctness.shapes_checked == 2, parsed.problems
    assert verdict(parsed) == "PASS"
    if layout != "pandas with a title lacking 'summary'":
        assert sorted(r.us_median for r in parsed.perf) == [3.22, 3.30]


def test_a_header_with_an_err_column_and_no_rule_is_a_problem() -> None:
    parsed = read(f"[aiter] ck: {PASSED}\n| m | ck err |\n| 16 | 0.97 |\n")
    assert verdict(parsed) == "INCONCLUSIVE"
    assert any("a table with an err column could not be read" in p for p in parsed.problems)


def test_the_ruled_layouts_give_each_row_as_cells_under_the_headers_names() -> None:
    from pytest_gpuverify.parsers.reading.tables import RuledTables

    rows: list[tuple[int, dict[str, str]]] = []
    tables = RuledTables(
        lambda n, names, cells: rows.append((n, dict(zip(names, cells)))),
        lambda _: None,
        simple_headers=lambda text: True,
    )
    for lineno, text in enumerate((ERR_TABLES["grid"] + "\n\n" + ERR_TABLES["simple"]).splitlines(), 1):
        tables.feed(lineno, text)
    assert rows[0] == (4, {"m": "16", "ck us": "3.22", "ck err": "0"})
    assert rows[-1][1] == {"m": "32", "ck us": "3.30", "ck err": "0.97"} and len(rows) == 4


# ----- NaN in a measured figure --------------------------------------------------------------------


def test_nan_in_a_throughput_cell_is_counted_and_a_finding() -> None:
    text = f"""[aiter] ck: {PASSED}
|    m |   ck us |   ck TFLOPS |
|-----:|--------:|------------:|
|   16 |    3.22 |         nan |
"""
    parsed = read(text)
    assert parsed.correctness.nan_count == 1
    assert parsed.perf[0].metrics == {"ck TFLOPS": None}
    assert any("nan in column 'ck TFLOPS'" in f for f in parsed.failures) and verdict(parsed) == "FAIL"


def test_nan_in_a_bench_throughput_cell_is_counted() -> None:
    text = f"""{PASSED}
  side       shape    kernel (us)   TFLOPS
  base   4096x4096          41.20    nan
"""
    parsed = read(text, BENCH)
    assert parsed.correctness.nan_count == 1 and verdict(parsed) == "FAIL"


def test_nan_in_a_one_line_throughput_is_counted() -> None:
    parsed = read(f"[aiter] ck_moe_2stages:  234.56 us,   nan tflops {PASSED}\n")
    assert parsed.correctness.nan_count == 1 and verdict(parsed) == "FAIL"


def test_nan_in_a_flydsl_throughput_is_counted(tmp_path: Path) -> None:
    from pytest_gpuverify.config.targets import FLYDSL_PYTEST
    from pytest_gpuverify.parsers import parse_output

    path = tmp_path / "out.txt"
    path.write_text("[flyc] Throughput: 12.3 us, nan TFLOPS, BW: 1.234 TB/s\n1 passed in 1.0s\n")
    parsed = parse_output(FLYDSL_PYTEST, path)
    assert parsed.correctness.nan_count == 1 and parsed.correctness.passed is False


@pytest.mark.parametrize("chunk", [3, 7, 64, 4096])
def test_both_readers_split_a_long_line_at_carriage_returns_alike(tmp_path: Path, chunk: int) -> None:
    from pytest_gpuverify.parsers.reading.lines import LineReader
    from pytest_gpuverify.parsers.registry import plan_for

    AITER = plan_for(AITER_OP_TEST).triggers

    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"p1\rp2\rp3long-p3long\rp4\rlast\n" + b"x" * 30 + b"\ry\rz\nend\n")
    expected = [
        (1, "short"),
        (2, "p1"),
        (2, "p2"),
        (2, "p3long-p3l"),
        (2, "p4"),
        (2, "last"),
        (3, "x" * 10),
        (3, "y"),
        (3, "z"),
        (4, "end"),
    ]
    plain = LineReader(path, max_line=10, chunk_size=chunk)
    every = prefilter.FilteredLineReader(path, AITER, lambda: True, max_line=10, chunk_size=chunk)
    for reader in (plain, every):
        assert list(reader) == expected
        assert reader.truncated_lines == [(2, 27), (3, 34)]  # a piece was cut in each: a problem
        assert reader.split_lines == [(2, 27), (3, 34)] and reader.lines_read == 4


def test_every_table_read_gives_its_rows_figures_and_dtypes(tmp_path: Path) -> None:
    text = (
        ERR_TABLES["box"] + "\n" + "[aiter] gemm summary:\n" + "                   dtype   m  ck us\n"
        "0  torch.float8_e4m3fnuz  16   3.22\n"
    )
    parsed = read(text, noise=False)
    assert [(r.shape, r.name, r.us_median) for r in parsed.perf][-1] == (
        "dtype=torch.float8_e4m3fnuz, m=16",
        "ck us",
        3.22,
    )
    assert len(parsed.perf) == 3 and parsed.perf[0].shape == "m=16"
    assert ("torch.float8_e4m3fnuz", "output line 9: column 'dtype'") in parsed.dtypes_seen


@pytest.mark.skipif(not hsscan_available(), reason="no hyperscan wheel here")
def test_a_kept_hyperscan_set_finds_what_a_compiled_one_finds(tmp_path: Path, monkeypatch) -> None:
    """The compiled set kept in the cache folder loads and scans (a loaded set needs its own scratch);
    a damaged file is compiled again."""
    from pytest_gpuverify.parsers.reading import hsscan as engine
    from pytest_gpuverify.parsers.reading.fold import compose
    from pytest_gpuverify.parsers.registry import registry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    chunk = b"x\n" + b"\n".join(n.encode() for n in NOISE) + b"\ncos_sim: 0.5\n[checkAllclose atol=1 rtol=1 failed!]\n"
    found = []
    for _ in range(2):  # compiled and kept; then loaded
        triggers = compose([cls.triggers for cls in registry()])
        found.append(triggers.patterns.line_starts(chunk, 2, len(chunk), 1000))
        assert triggers.patterns is not None
    assert found[0] == found[1] and len(found[0]) >= 2
    kept = list((tmp_path / "gpuverify" / "hyperscan").glob("*.db"))
    assert kept
    for path in kept:
        path.write_bytes(b"damaged")
    triggers = compose([cls.triggers for cls in registry()])
    assert triggers.patterns.line_starts(chunk, 2, len(chunk), 1000) == found[0]
    assert engine.available()
