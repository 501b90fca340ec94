"""The history store on both of its databases: a SQLite file and a real PostgreSQL server (a private
cluster, tests/support/postgres_cluster.py). The same tests run on each (the ``store_name`` fixture):
runs stored once by sha256, read back alike, migrations run once however many processes open a new store,
readers never waiting for a writer, 16 writer processes at once losing and doubling nothing; and a
server that cannot be reached costing the history only, in one line with the password masked."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from store_artifacts import never_ran
from test_history import exported, filled, stored_run

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.history.db import SCHEMA_VERSION, StoreError, connect, engine_url, locate, shown
from pytest_gpuverify.history.store import count, insert, insert_many, runs, targets

CLI = [sys.executable, "-m", "pytest_gpuverify.cli.main"]


def test_runs_are_stored_once_and_read_back_alike(store_name):
    with closing(connect(locate(store_name))) as conn:
        assert insert_many(conn, [stored_run(n, 10.0 + n) for n in range(5)]) == 5
        assert insert_many(conn, [stored_run(n) for n in range(3, 8)]) == 3  # 3 and 4 already stored
        assert not insert(conn, stored_run(0))
        assert insert(conn, stored_run(8, target="u"))
        assert count(conn) == 9 and targets(conn) == ["t", "u"]
        found = runs(conn, target="t")
        assert [r.artifact_sha256 for r in found] == [f"{n:064x}" for n in range(8)]
        assert [r.rows[0].median for r in found[:5]] == [10.0, 11.0, 12.0, 13.0, 14.0]
        assert found[0] == stored_run(0, 10.0)  # every field read back as stored
        newest = runs(conn, target="t", watch=False, newest_commits=2, newest_first=True)
        assert [len(r.rows) for r in newest] == [1, 1, 0, 0, 0, 0, 0, 0]  # rows of the newest two commits only
        assert runs(conn, ref="main", verdict="FAIL") == []


def test_history_commands_work_alike_on_both(store_name, tmp_path, capsys):
    with closing(connect(locate(store_name))) as conn:  # a trend with a step: the store's own writer
        assert insert_many(conn, [stored_run(n, 12.0 if n >= 6 else 10.0) for n in range(12)]) == 12
    assert main(["history", "show", "t", "--store", store_name]) == 0
    assert capsys.readouterr().out.count("REGRESSED") == 1
    assert main(["history", "export", "--store", store_name]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["artifact_sha256"] for line in out.splitlines()] == [f"{n:064x}" for n in range(12)]
    assert f"{shown(locate(store_name))}: 12 run(s) exported" in err and "s3cret" not in err
    lines = exported(tmp_path, 100, 3)  # real runs: import verifies each as add does
    assert main(["history", "import", str(lines), "--store", store_name]) == 0
    assert f"{lines}: 3 added, 0 already stored" in capsys.readouterr().out
    assert main(["history", "import", str(lines), "--store", store_name]) == 0
    assert f"{lines}: 0 added, 3 already stored" in capsys.readouterr().out


def test_a_new_store_opened_by_many_processes_at_once_is_migrated_once(store_name):
    opener = "import sys; from pytest_gpuverify.history.db import connect, locate; connect(locate(sys.argv[1])).close()"
    procs = [
        subprocess.Popen([sys.executable, "-c", opener, store_name], stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    assert [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs] == [(0, "")] * 6
    with closing(connect(locate(store_name))) as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == [
            f"{SCHEMA_VERSION:04d}"
        ]
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0099'")
        conn.commit()
    with pytest.raises(StoreError, match="history schema 99 is newer than this gpuverify's"):
        connect(locate(store_name))


HOLDER = """import sys, time
from pytest_gpuverify.history.db import connect, locate, transaction
conn = connect(locate(sys.argv[1]))
with transaction(conn):
    conn.exec_driver_sql("UPDATE perf SET median = -1")  # not committed: no reader may see it
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    raise SystemExit(0)
"""


def test_readers_never_wait_for_a_writer(store_name, tmp_path, capsys):
    name = locate(store_name)
    if isinstance(name, Path):
        filled(name, 12, step_at=6)
    else:
        with closing(connect(name)) as conn:
            insert_many(conn, [stored_run(n, (12.0 if n >= 6 else 10.0) * (1 + 0.002 * (n % 3))) for n in range(12)])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, store_name, "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        start = time.monotonic()
        capsys.readouterr()
        assert main(["history", "show", "t", "--store", store_name]) == 0
        assert main(["history", "export", "--store", store_name]) == 0
        assert time.monotonic() - start < 10
        out = capsys.readouterr().out
        assert "REGRESSED" in out and "median -1" not in out and '"median":-1' not in out.replace(" ", "")
    finally:
        holder.kill()
        holder.wait()


def test_a_postgresql_url_is_taken_wherever_a_store_is_named(monkeypatch, tmp_path):
    from pytest_gpuverify.history.command import store_path

    url = "postgresql://ci:pw@db.example:5432/history"
    assert locate(url) == url and store_path(url) == url
    monkeypatch.setenv("GPUVERIFY_HISTORY", "postgres://ci@db.example/history")
    assert store_path(None) == "postgres://ci@db.example/history"
    assert engine_url(url).drivername == engine_url("postgres://ci@db.example/h").drivername == "postgresql+psycopg"
    assert shown(url) == "postgresql://ci:***@db.example:5432/history"
    assert locate("~/h.db") == Path("~/h.db").expanduser() and locate(str(tmp_path)) == tmp_path


def test_a_server_that_cannot_be_reached_costs_the_history_only(tmp_path, capsys):
    from ports import free_port

    from pytest_gpuverify.history.session import SessionHistory

    url = f"postgresql://ci:hunter22@127.0.0.1:{free_port()}/history"  # nothing listens there
    artifact = never_ran(tmp_path, 1)
    assert main(["history", "add", str(artifact), "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunter22" not in err and "Traceback" not in err, err
    assert err.startswith(f"gpuverify history add: postgresql://ci:***@127.0.0.1:{url.split(':')[3]}") and (
        "cannot reach the database server" in err and "Fix: start the PostgreSQL server" in err
    ), err
    history = SessionHistory(locate(url))
    history.add([artifact])
    later = never_ran(tmp_path, 2)
    history.add([later])  # the next target's end: the server is not waited for again
    assert later not in history.tried
    (line,), bad = history.lines()
    assert bad and line.startswith("history not kept: postgresql://ci:***@") and "hunter22" not in line


def test_a_refused_login_and_a_missing_database_are_one_line(postgres, tmp_path, capsys):
    wrong = postgres.url(password="not-the-password")
    assert main(["history", "show", "t", "--store", wrong]) == 2
    err = capsys.readouterr().err
    assert "the server refused the login" in err and "not-the-password" not in err and err.count("\n") == 1, err
    missing = postgres.url("no_such_db")
    assert main(["history", "export", "--store", missing]) == 2
    err = capsys.readouterr().err
    assert "no such database" in err and "Fix: createdb no_such_db" in err and "s3cret" not in err, err
    empty = postgres.create_database("empty_store")
    assert main(["history", "export", "--store", empty]) == 2
    assert "no history store there. Fix: add runs first" in capsys.readouterr().err
    assert main(["history", "import", str(exported(tmp_path, 0, 3)), "--store", empty]) == 0  # a writer makes it


READER = """import subprocess, sys, time
from pathlib import Path
stop, counts = Path(sys.argv[2]), []
while not stop.exists():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "history", "export", "--store",
                           sys.argv[1]], capture_output=True, text=True)
    counts.append((proc.returncode, len(proc.stdout.splitlines()), round(time.monotonic() - start, 2), proc.stderr))
print(repr(counts))
"""


def writers_at_once(store_name: str, folder: Path, writers: int = 16) -> tuple[list[Path], list, list]:
    """``writers`` processes of ``gpuverify history add`` at once: each its own four artifacts, its
    neighbour's four (two writers of each), and four that every writer adds; a reader exporting throughout.
    (the artifacts, each writer's (exit, stdout, stderr), the reader's (exit, runs read, seconds, stderr))."""
    own = [[never_ran(folder, w * 4 + k) for k in range(4)] for w in range(writers)]
    shared = [never_ran(folder, 10_000 + k) for k in range(4)]
    with closing(connect(locate(store_name))):
        pass  # the store made before the reader starts (a new store's migration by many: the test above)
    stop = folder / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, store_name, str(stop)], stdout=subprocess.PIPE, text=True)
    procs = [
        subprocess.Popen(
            [*CLI, "history", "add", *map(str, shared + own[w] + own[(w + 1) % writers]), "--store", store_name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    stop.touch()
    out, _ = reader.communicate(timeout=120)
    return [a for group in own for a in group] + shared, results, ast.literal_eval(out)


@pytest.mark.slow
def test_sixteen_writers_at_once_store_every_run_once(store_name, tmp_path):
    artifacts, results, reads = writers_at_once(store_name, tmp_path)
    assert [rc for rc, _, _ in results] == [0] * 16, [err for _, _, err in results if err]
    added = sum(int(out.rsplit(": ", 1)[1].split(" added")[0]) for _, out, _ in results)
    assert added == len(artifacts) == 68  # each run stored by exactly one writer: 0 lost, 0 doubled
    assert sum(out.count(": already stored") for _, out, _ in results) == 16 * 12 - 68
    with closing(connect(locate(store_name))) as conn:
        stored = runs(conn)
        assert len(stored) == count(conn) == 68 and len({r.artifact_sha256 for r in stored}) == 68
    assert {r.artifact_path for r in stored} == {str(a.resolve()) for a in artifacts}
    assert reads and all(rc == 0 for rc, *_ in reads), reads  # the reader answered throughout
    seen = [n for _, n, _, _ in reads]
    assert seen == sorted(seen) and seen[-1] <= 68, seen  # committed runs only, never one taken back
