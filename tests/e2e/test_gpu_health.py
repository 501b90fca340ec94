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
