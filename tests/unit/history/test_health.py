"""The health of the machines (history/health.py): what the store keeps per GPU as each run is added, when a
GPU is judged unhealthy, and how a clear ends that; on a real SQLite store."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest
from store_artifacts import held_gpu

from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.health import (
    HealthSpecError,
    Thresholds,
    clear,
    clears,
    gpu_runs_of,
    no_gpu_hosts,
    parse_thresholds,
    session_health,
    unhealthy,
)
from pytest_gpuverify.history.records import stored_run
from pytest_gpuverify.history.store import insert


def add(conn, n: int, **kw) -> None:
    art = held_gpu(n, **kw)
    assert insert(conn, stored_run(art, Path(f"/t/{n}/bench_w.json"), f"{n:064x}", "main"))


@pytest.fixture()
def store(tmp_path):
    with closing(connect(tmp_path / "h.db")) as conn:
        yield conn


def test_a_run_is_kept_per_gpu_by_uuid_and_a_no_gpu_run_per_host():
    (timed,) = gpu_runs_of(held_gpu(1, uuid="GPU-7", timed_out=True, ecc_uncorrected=2))
    assert (timed.uuid, timed.index, timed.timed_out, timed.ecc_uncorrected, timed.no_gpu) == (
        "GPU-7",
        0,
        True,
        2,
        False,
    )
    (none,) = gpu_runs_of(held_gpu(2, no_gpu=True, host="h9"))
    assert (none.uuid, none.host, none.no_gpu) == (None, "h9", True)
    art = held_gpu(3)
    art.gpu.uuid = None
    art.gpus[0].uuid = None
    assert gpu_runs_of(art) == []  # no UUID read: nothing to keep it by


def test_three_timeouts_in_twenty_runs_make_a_gpu_unhealthy_until_cleared(store):
    for n in range(1, 18):
        add(store, n, uuid="GPU-A", timed_out=n in (3, 9, 15))
        add(store, 100 + n, uuid="GPU-B", timed_out=n in (3, 9))
    (bad,) = unhealthy(store, Thresholds())
    assert (bad.uuid, bad.timeouts, bad.runs, bad.host) == ("GPU-A", 3, 17, "h1")
    assert "3 timeout(s) or dead container(s) in its last 17 run(s)" in bad.line()
    assert "gpuverify history clear-health --gpu GPU-A" in bad.line()
    # past the window, old timeouts no longer count
    assert unhealthy(store, Thresholds(window=5)) == []
    who, runs = clear(store, "GPU-A", by="alice")
    assert (who, runs) == ("alice", 17)
    assert unhealthy(store, Thresholds()) == []
    assert [c["cleared_by"] for c in clears(store, "GPU-A")] == ["alice"]
    # runs after the clear are judged again (their time is after it: a later year)
    for n in range(3):
        art = held_gpu(n, uuid="GPU-A", timed_out=True)
        art.ts = f"2099-01-01T00:00:0{n}Z"
        insert(store, stored_run(art, Path(f"/t/late{n}"), f"{n + 500:064x}", "main"))
    assert [g.uuid for g in unhealthy(store, Thresholds())] == ["GPU-A"]


def test_uncorrected_ecc_counts_past_the_clear(store):
    add(store, 1, uuid="GPU-E", ecc_uncorrected=0)
    assert unhealthy(store, Thresholds()) == []
    add(store, 2, uuid="GPU-E", ecc_uncorrected=2)
    (bad,) = unhealthy(store, Thresholds())
    assert bad.ecc_new == 2 and "2 uncorrected ECC error(s)" in bad.reasons
    clear(store, "GPU-E")
    art = held_gpu(3, uuid="GPU-E", ecc_uncorrected=2)  # the driver's count since it loaded: the same 2
    art.ts = "2099-01-01T00:00:00Z"
    insert(store, stored_run(art, Path("/t/e3"), f"{777:064x}", "main"))
    assert unhealthy(store, Thresholds()) == []
    art.ts, art.machine.gpus[0].ecc_uncorrected = "2099-01-01T00:00:01Z", 3  # type: ignore[union-attr]
    insert(store, stored_run(art, Path("/t/e4"), f"{778:064x}", "main"))
    (bad,) = unhealthy(store, Thresholds())
    assert bad.ecc_new == 1


def test_a_host_that_often_got_no_gpu_is_listed(store):
    for n in range(4):
        add(store, n, host="busy", no_gpu=n < 2)
        add(store, 10 + n, host="calm", no_gpu=n < 1)
    (line,) = no_gpu_hosts(store, Thresholds())
    assert line.startswith("busy: 2 of its last 4 run(s) got no GPU (NO_GPU)")
    assert no_gpu_hosts(store, Thresholds(off=True)) == []


def test_thresholds_text():
    assert parse_thresholds(None) == Thresholds()
    assert parse_thresholds("timeouts=2/5, no-gpu=25%/8") == Thresholds(2, 5, 1, 0.25, 8)
    assert parse_thresholds("OFF").off
    for bad, said in (
        ("hangs=3", "unknown threshold 'hangs'"),
        ("ecc=x", "'ecc=x' is not a number"),
        ("timeouts=9/3", "within"),
    ):
        with pytest.raises(HealthSpecError, match=said):
            parse_thresholds(bad, "--gpu-health")


def test_a_session_reads_health_once_and_a_bad_store_is_one_line(tmp_path):
    path = tmp_path / "h.db"
    assert session_health(str(path), None) == ({}, None)  # no store yet: nothing recorded, nothing said
    with closing(connect(path)) as conn:
        for n in range(3):
            add(conn, n, uuid="GPU-A", timed_out=True)
    bad, problem = session_health(str(path), None)
    assert problem is None and list(bad) == ["GPU-A"]
    assert bad["GPU-A"].endswith("(clear: gpuverify history clear-health --gpu GPU-A)")
    assert session_health(str(path), "timeouts=4/20") == ({}, None)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    bad, problem = session_health(str(junk), None)
    assert bad == {} and problem is not None and problem.startswith(f"GPU health not judged: {junk}: not a usable")
    assert "\n" not in problem
    bad, problem = session_health(str(path), "hangs=1")
    assert bad == {} and "unknown threshold" in (problem or "")


def test_an_export_carries_the_health_and_an_import_keeps_it(tmp_path):
    from pytest_gpuverify.history.store import runs

    with closing(connect(tmp_path / "a.db")) as conn:
        for n in range(3):
            add(conn, n, uuid="GPU-X", timed_out=True)
        exported = runs(conn)
    assert [len(r.gpus) for r in exported] == [1, 1, 1] and exported[0].gpus[0].uuid == "GPU-X"
    lines = [r.model_dump_json() for r in exported]
    from pytest_gpuverify.history.records import StoredRun
    from pytest_gpuverify.history.store import insert_many

    with closing(connect(tmp_path / "b.db")) as conn:
        assert insert_many(conn, [StoredRun.model_validate_json(line) for line in lines]) == 3
        assert [g.uuid for g in unhealthy(conn, Thresholds())] == ["GPU-X"]
