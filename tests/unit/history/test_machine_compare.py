"""``compare --history`` across a driver update (history/compare.py): the base runs of another driver are not like
work; the refusal says the driver changed there, and with ``--may-differ driver`` the compare's notes say so,
as the PR comment and issue body then show (reporting/pr_comment.py)."""

from __future__ import annotations

import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from store_artifacts import held_gpu

from pytest_gpuverify.compare.command import Refused
from pytest_gpuverify.history.compare import against_history, base_runs
from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.reader import StoreReader
from pytest_gpuverify.history.records import stored_run
from pytest_gpuverify.history.store import insert_many
from pytest_gpuverify.records.artifact import PerfRow, RepoRecord, dump_artifact
from pytest_gpuverify.reporting.pr_comment import CompareDoc, issue_body, pr_comment

OLD, NEW = "amdgpu 6.12.12", "amdgpu 6.14.4"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def made(n: int, sha: str, repo: Path, driver: str, us: float):
    art = held_gpu(n, driver=driver)
    art.perf = [PerfRow(shape="M=16", name="ck", us_median=us + 0.02 * (n % 3))]
    art.repos = [RepoRecord(path=str(repo), sha=sha, dirty=False)]
    return art


@pytest.fixture()
def lab(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for n in range(6):
        (repo / "f").write_text(str(n))
        git(repo, "add", "f")
        git(repo, "commit", "-qm", f"c{n}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    store = tmp_path / "h.db"
    with closing(connect(store)) as conn:
        insert_many(
            conn,
            [stored_run(made(n, shas[n], repo, OLD, 10.0), Path(f"/t/{n}"), f"{n:064x}", "main") for n in range(5)],
        )
    head = made(5, shas[5], repo, NEW, 12.0)
    path = tmp_path / "bench_w.json"
    path.write_bytes(dump_artifact(head))
    return store, head, path


def test_a_base_on_another_driver_is_refused_naming_the_change(lab):
    store, head, _ = lab
    with closing(StoreReader(store)) as conn, pytest.raises(Refused) as refused:
        base_runs(conn, str(store), head, "f" * 64, None, 5, frozenset())
    said = str(refused.value)
    assert said.startswith(f"the driver changed from {OLD} to {NEW} at this point: ")
    assert "Fix: run a base commit on amdgpu 6.14.4" in said and "--may-differ driver" in said


def test_across_the_update_the_compare_and_its_comment_say_the_driver_changed(lab):
    store, head, path = lab
    with closing(StoreReader(store)) as conn:
        result = against_history(conn, str(store), head, str(path), None, may_differ=frozenset({"driver"}))
    note = f"the driver changed from {OLD} to {NEW} at this point: a change of the rows here may be the machine's"
    assert any(n.startswith(note) for n in result.notes), result.notes
    from pytest_gpuverify.compare.render import as_json

    doc = CompareDoc.model_validate_json(as_json(result))
    assert f":warning: {note}" in pr_comment([doc])
    for pair in doc.pairs:  # as an A/B on one driver would have confirmed it (one head run calls nothing)
        pair.call, pair.confirmed = "REGRESSED", True
    body = issue_body([doc]) or ""
    assert f":warning: {note}" in body
