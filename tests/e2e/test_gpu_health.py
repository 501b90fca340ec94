"""The machines' health on the simulated host: a GPU whose runs timed out 3 times is skipped by the next
session's picker (said in its artifact) and listed by ``gpuverify doctor`` until ``gpuverify history
clear-health`` clears it."""

from __future__ import annotations

import shutil
import subprocess

from doctor_cmd import doctor

from pytest_gpuverify.cli.main import main


def _commit(repo) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sleepers"], check=True
    )


def test_a_gpu_that_timed_out_3_times_is_skipped_listed_and_cleared(sandbox, tmp_path, capsys):
    store = tmp_path / "history.db"
    tests = sandbox.repo / "op_tests"
    for n in (2, 3):
        shutil.copy(tests / "test_sleep.py", tests / f"test_sleep{n}.py")
    _commit(sandbox.repo)
    history = f"--gpu-history={store}"
    sandbox.pytest(
        "op_tests/test_sleep.py", "op_tests/test_sleep2.py", "op_tests/test_sleep3.py", "--gpu-timeout", "1", history
    )
    timed = [sandbox.artifact(topic) for topic in ("sleep", "sleep2", "sleep3")]
    assert all(a.timed_out for a in timed), [a.reasons for a in timed]
    uuids = {a.gpus[0].uuid for a in timed}
    assert len(uuids) == 1 and None not in uuids, uuids  # the first idle GPU each time
    (sick,) = uuids
    sick_index = timed[0].gpus[0].index

    proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", history, ticket="T-2")
    art = sandbox.artifact("rmsnorm2d", ticket="T-2")
    assert art.verdict == "PASS", (art.reasons, proc.stdout[-2000:])
    assert art.gpus[0].uuid != sick
    said = [n for n in art.notes if "skipped by the picker for its health" in n]
    assert said and said[0].startswith(f"gpu {sick_index} skipped"), art.notes
    assert "3 timeout(s) or dead container(s) in its last 3 run(s)" in said[0]

    code, text = doctor(sandbox, GPUVERIFY_HEALTH_STORE=str(store))
    assert f"unhealthy {sick} " in text and "1 GPU(s) skipped for their health" in text, text
    assert main(["history", "clear-health", "--store", str(store), "--gpu", sick, "--by", "ops"]) == 0
    assert capsys.readouterr().out.startswith(f"{sick}: cleared by ops (3 run(s) stored before")
    code, text = doctor(sandbox, GPUVERIFY_HEALTH_STORE=str(store))
    assert f"unhealthy {sick}" not in text and "0 GPU(s) skipped by the picker" in text, text


def test_history_show_names_a_driver_update_at_its_step_not_a_commit(tmp_path, capsys):
    from contextlib import closing
    from pathlib import Path

    from store_artifacts import held_gpu

    from pytest_gpuverify.history.db import connect
    from pytest_gpuverify.history.records import stored_run
    from pytest_gpuverify.history.store import insert_many
    from pytest_gpuverify.records.artifact import PerfRow, RepoRecord

    old, new = "amdgpu 6.12.12", "amdgpu 6.14.4"
    found = []
    for n in range(1, 17):
        art = held_gpu(n, driver=old if n <= 8 else new)
        art.perf = [PerfRow(shape="M=16", name="ck", us_median=(10.0 if n <= 8 else 12.0) + 0.02 * (n % 3))]
        art.repos = [RepoRecord(path="/gone", sha=f"{n:02d}" + "e" * 38, dirty=False)]
        found.append(stored_run(art, Path(f"/t/{n}/bench_w.json"), f"{n:064x}", "main"))
    store = tmp_path / "h.db"
    with closing(connect(store)) as conn:
        insert_many(conn, found)
    assert main(["history", "show", "w", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "REGRESSED" in line]
    assert len(said) == 1, out
    assert (
        f"REGRESSED the driver changed from {old} to {new} at this point (after 08eeeeeeeeee, at 09eeeeeeeeee: "
        in (said[0])
    )
    assert "not a commit's doing" in said[0] and "08eeeeeeeeee..09eeeeeeeeee" not in out


def test_health_is_judged_alike_on_sqlite_and_postgresql(store_name, capsys):
    """The window and clear queries on both engines: 3 timeouts flag a GPU, a clear ends it, doctor's query too."""
    from contextlib import closing
    from pathlib import Path

    from store_artifacts import held_gpu

    from pytest_gpuverify.history.db import connect, locate
    from pytest_gpuverify.history.health import Thresholds, no_gpu_hosts, session_health, unhealthy
    from pytest_gpuverify.history.records import stored_run
    from pytest_gpuverify.history.store import insert_many

    arts = [held_gpu(n, uuid="GPU-S", timed_out=n % 2 == 0) for n in range(1, 8)]
    arts += [held_gpu(10 + n, host="h2", no_gpu=True) for n in range(2)]
    with closing(connect(locate(store_name))) as conn:
        insert_many(conn, [stored_run(a, Path(f"/t/{a.ts}"), f"{i:064x}", "main") for i, a in enumerate(arts)])
        (sick,) = unhealthy(conn, Thresholds())
        assert (sick.uuid, sick.timeouts, sick.runs) == ("GPU-S", 3, 7)
        assert [line.split(":")[0] for line in no_gpu_hosts(conn, Thresholds())] == ["h2"]
    assert session_health(store_name, None)[0].keys() == {"GPU-S"}
    assert main(["history", "clear-health", "--store", store_name, "--gpu", "GPU-S"]) == 0
    assert session_health(store_name, None) == ({}, None)
    assert "cleared by" in capsys.readouterr().out
