"""Writing and reading :class:`StoredRun` records: one transaction per run, a run known by its
artifact's sha256 (adding the same artifact twice keeps one)."""

from __future__ import annotations

import json
import sqlite3
from typing import Optional

from pytest_gpuverify.records.artifact import GpuWatch, utc_now
from pytest_gpuverify.history.db import transaction
from pytest_gpuverify.history.records import StoredRow, StoredRun

_RUN_COLUMNS = ("artifact_sha256", "artifact_path", "target", "topic", "ticket", "host", "facts", "image_digest",
                "sha", "ref", "dirty", "ts", "verdict", "watch", "added")
_ROW_COLUMNS = ("run_id", "tbl", "shape", "name", "stat", "metric", "direction", "run_values", "median", "min", "max", "cv")


def insert(conn: sqlite3.Connection, run: StoredRun) -> bool:
    """Store ``run``; False when the store already holds its artifact (by sha256)."""
    return insert_many(conn, [run]) == 1


def insert_many(conn: sqlite3.Connection, found: list[StoredRun]) -> int:
    """Store ``found`` in one transaction (one wait for the write lock); how many were new."""
    with transaction(conn):
        return sum(_insert(conn, run) for run in found)


def _insert(conn: sqlite3.Connection, run: StoredRun) -> bool:
    values = (run.artifact_sha256, run.artifact_path, run.target, run.topic, run.ticket, run.host,
              json.dumps(run.facts, sort_keys=True), run.image_digest, run.sha, run.ref,
              None if run.dirty is None else int(run.dirty), run.ts, run.verdict,
              json.dumps([w.model_dump(mode="json") for w in run.watch]), utc_now())
    cur = conn.execute(f"INSERT OR IGNORE INTO runs ({', '.join(_RUN_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))})", values)
    if cur.rowcount == 0:
        return False
    conn.executemany(f"INSERT INTO perf ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})",
                     [(cur.lastrowid, r.table, r.shape, r.name, r.stat, r.metric, r.direction, json.dumps(r.values),
                       r.median, r.min, r.max, r.cv) for r in run.rows])
    return True


def runs(conn: sqlite3.Connection, target: Optional[str] = None, ref: Optional[str] = None,
         verdict: Optional[str] = None, newest_first: bool = False) -> list[StoredRun]:
    """The stored runs of ``target`` (its name, else its topic), on ``ref``, of ``verdict``, by time."""
    where, args = [], []
    if target is not None:
        where.append("(target = ? OR (target IS NULL AND topic = ?))")
        args += [target, target]
    if ref is not None:
        where.append("ref = ?")
        args.append(ref)
    if verdict is not None:
        where.append("verdict = ?")
        args.append(verdict)
    sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
    sql += f" ORDER BY ts {'DESC' if newest_first else 'ASC'}, id"
    found = conn.execute(sql, args).fetchall()
    perf: dict[int, list[StoredRow]] = {}
    if found:
        ids = [r["id"] for r in found]
        for row in conn.execute(f"SELECT * FROM perf WHERE run_id IN ({', '.join('?' * len(ids))}) ORDER BY rowid", ids):
            perf.setdefault(row["run_id"], []).append(StoredRow(
                table=row["tbl"], shape=row["shape"], name=row["name"], stat=row["stat"], metric=row["metric"],
                direction=row["direction"], values=json.loads(row["run_values"]), median=row["median"],
                min=row["min"], max=row["max"], cv=row["cv"]))
    return [_run(r, perf.get(r["id"], [])) for r in found]


def _run(row: sqlite3.Row, perf: list[StoredRow]) -> StoredRun:
    return StoredRun(artifact_sha256=row["artifact_sha256"], artifact_path=row["artifact_path"], target=row["target"],
                     topic=row["topic"], ticket=row["ticket"], host=row["host"], facts=json.loads(row["facts"]),
                     image_digest=row["image_digest"], sha=row["sha"], ref=row["ref"],
                     dirty=None if row["dirty"] is None else bool(row["dirty"]), ts=row["ts"], verdict=row["verdict"],
                     watch=[GpuWatch.model_validate(w) for w in json.loads(row["watch"])], rows=perf)


def targets(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT coalesce(target, topic) FROM runs ORDER BY 1")]


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
