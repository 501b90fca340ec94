"""The trace's rule on real files: the simulated rocprofv3 runs the demo's traced lab harness and writes
rocpd SQLite; the printed log is parsed by the bench parser; the rule sets one against the other."""

from __future__ import annotations

import json
import sqlite3

import pytest
from traced_lab import traced

from pytest_gpuverify.engine.runs_log import parse_log
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import PerfRow, ProfileRecord
from pytest_gpuverify.trace.corroborate import MIN_LOOP, TOLERANCE, corroborate, corroborate_profile, kernel_loops
from pytest_gpuverify.trace.launches import Launch, TraceError
from pytest_gpuverify.trace.readers import read_trace


def perf_of(log):
    return parse_log("bench", log, ParseContext()).perf


def test_the_simulated_tracer_writes_rocpds_own_tables_and_views(tmp_path):
    db, _, _ = traced(tmp_path)
    con = sqlite3.connect(db)
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    views = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    assert {"rocpd_kernel_dispatch", "rocpd_info_kernel_symbol", "rocpd_timestamp", "rocpd_info_code_object"} <= views
    assert all(any(t.startswith(v + "_") for t in tables) for v in views)  # each view over its run's own table
    assert dict(con.execute("SELECT tag, value FROM rocpd_metadata"))["schema_version"] == "3"
    cols = [row[1] for row in con.execute("PRAGMA table_info(rocpd_kernel_dispatch)")]
    assert cols[:7] == ["id", "guid", "track_id", "kernel_id", "dispatch_id", "start_id", "end_id"]
    # three shapes: a warm-up, a one-off fill and 50 timed launches each
    assert con.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone() == (3 * 52,)


def test_an_honest_harness_agrees_with_its_trace(tmp_path):
    db, log, _ = traced(tmp_path)
    launches = read_trace(db, "rocpd")
    assert launches[0].name == "gemm_kernel" and launches[0].grid == (512, 64, 1)
    found = corroborate(perf_of(log), launches, None)
    assert found.doubts == [] and found.notes == []
    assert [(row.shape, loop.median_ns) for row, loop in found.pairs] == [
        ("m=128, n=4096, k=4096", 100400),
        ("m=256, n=4096, k=4096", 180720),
        ("m=512, n=8192, k=4096", 612440),
    ]


def test_a_timer_divided_by_10_is_named_with_both_figures(tmp_path):
    db, log, _ = traced(tmp_path, divisor=10.0)
    found = corroborate(perf_of(log), read_trace(db, "rocpd"), "gemm")
    assert len(found.doubts) == 3, found.doubts
    # the filter leaves the one-off fill out, so each shape's warm-up joins its loop: 51 launches, median unmoved
    assert found.doubts[0].startswith(
        "m=128, n=4096, k=4096 us: printed 0.0102 ms, the trace's kernels took 0.1 ms a call (gemm_kernel, 51 launches"
    ), found.doubts[0]


def test_a_timer_within_the_tolerance_is_not_flagged(tmp_path):
    """Clock differences between the runs: a printed time down to 1/(1+TOLERANCE) of the kernel's passes."""
    db, log, _ = traced(tmp_path, divisor=1.0 + TOLERANCE * 0.9)
    assert corroborate(perf_of(log), read_trace(db, "rocpd"), None).doubts == []


def test_rows_and_loops_that_do_not_pair_are_a_note_never_a_doubt(tmp_path):
    db, log, _ = traced(tmp_path, divisor=10.0)
    launches = read_trace(db, "rocpd")
    found = corroborate(perf_of(log)[:2], launches, None)
    assert found.doubts == [] and found.notes == [
        "--gpu-trace: 2 printed times, 3 kernel loops in the trace: not paired. "
        "Fix: --gpu-trace-filter REGEX naming the kernel the printed times cover"
    ]
    # a filter that matches no loop: no pairing either
    assert corroborate(perf_of(log), launches, "nothing_like_it").doubts == []


def test_loops_need_consecutive_launches_of_one_kernel_at_one_grid():
    def la(name, grid, t):
        return Launch(name, (grid, 1, 1), t * 1000, t * 1000 + 500)

    seq = [la("k", 1, t) for t in range(MIN_LOOP)] + [la("flush", 9, 10)] + [la("k", 2, 20 + t) for t in range(2)]
    assert [(lp.name, lp.grid, len(lp.durations_ns)) for lp in kernel_loops(seq, None)] == [("k", (1, 1, 1), 3)]
    # interleaved cache flushes break a loop unless the filter leaves them out
    mixed = [x for t in range(4) for x in (la("k", 1, 2 * t), la("flush", 9, 2 * t + 1))]
    assert kernel_loops(mixed, None) == [] and len(kernel_loops(mixed, "^k$")[0].durations_ns) == 4


@pytest.mark.parametrize(
    "fault, says",
    [("garbage", "is not a readable rocpd database"), ("empty", "holds no kernel launch")],
)
def test_an_unreadable_or_empty_trace_is_one_reason(tmp_path, fault, says):
    db, log, _ = traced(tmp_path, faults={"rocprofv3": fault})
    record = ProfileRecord(tool="rocprofv3", format="rocpd", path=db.name)
    found = corroborate_profile(record, db.parent, perf_of(log))
    assert len(found.doubts) == 1 and found.doubts[0].startswith("--gpu-trace: ") and says in found.doubts[0]


def test_a_failed_trace_run_and_a_missing_file_are_one_reason_each(tmp_path):
    failed = ProfileRecord(tool="rocprofv3", format="rocpd", problem="the trace run under rocprofv3 exited with 1")
    assert corroborate_profile(failed, tmp_path, []).doubts == [
        "--gpu-trace: the trace run under rocprofv3 exited with 1"
    ]
    gone = ProfileRecord(tool="rocprofv3", format="rocpd", path="gone.db")
    assert corroborate_profile(gone, tmp_path, []).doubts == ["--gpu-trace: gone.db: no such file"]
    with pytest.raises(TraceError, match="no reader for the format 'csv'"):
        read_trace(tmp_path / "x", "csv")


def test_kinetos_chrome_trace_gives_the_same_launches(tmp_path):
    events = [
        {"ph": "X", "cat": "kernel", "name": "add_kernel", "ts": 10.0 + i, "dur": 0.25, "args": {"grid": [4, 1, 1]}}
        for i in range(5)
    ] + [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 9.0, "dur": 1.0}]
    path = tmp_path / "t.kineto.json"
    path.write_text(json.dumps({"traceEvents": events}))
    launches = read_trace(path, "kineto-json")
    assert [(la.name, la.grid, la.duration_ns) for la in launches] == [("add_kernel", (4, 1, 1), 250)] * 5
    row = PerfRow(shape="n=4096", name="us", us_median=0.02)  # 20 ns printed, 250 ns ran
    assert (
        corroborate([row], launches, None)
        .doubts[0]
        .startswith("n=4096 us: printed 2e-05 ms, the trace's kernels took 0.00025 ms a call")
    )
    path.write_text("{not json")
    with pytest.raises(TraceError, match="is not a readable Kineto trace"):
        read_trace(path, "kineto-json")


def test_nsys_sqlite_export_is_read_from_its_kernel_table(tmp_path):
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "gridX INTEGER, gridY INTEGER, gridZ INTEGER, shortName INTEGER, demangledName INTEGER)"
    )
    con.execute("INSERT INTO StringIds VALUES (1, 'matmul_kernel'), (2, 'matmul_kernel(float*)')")
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 8, 8, 1, 1, 2)", [(t, t + 700) for t in (3000, 1000)]
    )
    con.commit()
    con.close()
    launches = read_trace(db, "nsys-sqlite")
    assert [(la.name, la.grid, la.start_ns, la.duration_ns) for la in launches] == [
        ("matmul_kernel", (8, 8, 1), 1000, 700),
        ("matmul_kernel", (8, 8, 1), 3000, 700),
    ]
