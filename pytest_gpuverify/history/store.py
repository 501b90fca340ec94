"""Writing and reading :class:`StoredRun` records: one transaction per run, a run known by its
artifact's sha256 (adding the same artifact twice keeps one)."""

from __future__ import annotations

import json
import sqlite3

from pytest_gpuverify.history.db import transaction
from pytest_gpuverify.history.records import StoredRow, StoredRun
from pytest_gpuverify.records.artifact import GpuWatch, utc_now

_RUN_COLUMNS = (
    "artifact_sha256",
    "artifact_path",
    "target",
    "topic",
    "ticket",
    "host",
    "facts",
    "image_digest",
    "sha",
    "ref",
    "dirty",
    "ts",
    "verdict",
    "watch",
    "added",
)
_ROW_COLUMNS = (
    "run_id",
    "tbl",
    "shape",
    "name",
    "stat",
    "metric",
    "direction",
    "run_values",
    "median",
    "min",
    "max",
    "cv",
)


def insert(conn: sqlite3.Connection, run: StoredRun) -> bool:
    """Store ``run``; False when the store already holds its artifact (by sha256)."""
    return insert_many(conn, [run]) == 1


def insert_many(conn: sqlite3.Connection, found: list[StoredRun]) -> int:
    """Store ``found`` in one transaction (one wait for the write lock); how many were new."""
    with transaction(conn):
        return sum(_insert(conn, run) for run in found)


def _insert(conn: sqlite3.Connection, run: StoredRun) -> bool:
    values = (
        run.artifact_sha256,
        run.artifact_path,
        run.target,
        run.topic,
        run.ticket,
        run.host,
        json.dumps(run.facts, sort_keys=True),
        run.image_digest,
        run.sha,
        run.ref,
        None if run.dirty is None else int(run.dirty),
        run.ts,
        run.verdict,
        json.dumps([w.model_dump(mode="json") for w in run.watch]),
        utc_now(),
    )
    cur = conn.execute(
        f"INSERT OR IGNORE INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))})", values
    )
    if cur.rowcount == 0:
        return False
    conn.executemany(
        f"INSERT INTO perf ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})",
        [
            (
                cur.lastrowid,
                r.table,
                r.shape,
                r.name,
                r.stat,
                r.metric,
                r.direction,
                json.dumps(r.values),
                r.median,
                r.min,
                r.max,
                r.cv,
            )
            for r in run.rows
        ],
    )
    return True


# The perf rows of the runs of each like-facts set's newest N commits (a run without a commit is its own).
_NEWEST_ROWS = """
WITH counted AS (SELECT id, coalesce(sha, 'run ' || id) AS made, facts, image_digest, ts FROM runs
                 WHERE {filters}verdict = 'PASS' AND NOT coalesce(dirty, 0)),
     commits AS (SELECT made, facts, image_digest, row_number() OVER (PARTITION BY facts, image_digest
                 ORDER BY max(ts) DESC, made) AS newness FROM counted GROUP BY made, facts, image_digest)
SELECT perf.* FROM perf JOIN counted ON counted.id = perf.run_id
  JOIN commits ON commits.made = counted.made AND commits.facts = counted.facts
                  AND commits.image_digest IS counted.image_digest
  WHERE newness <= ? ORDER BY perf.rowid"""


def runs(
    conn: sqlite3.Connection,
    target: str | None = None,
    ref: str | None = None,
    verdict: str | None = None,
    newest_first: bool = False,
    watch: bool = True,
    newest_commits: int | None = None,
) -> list[StoredRun]:
    """The stored runs of ``target`` (its name, else its topic), on ``ref``, of ``verdict``, by time.

    ``watch=False`` (trends: ``history show``, the report) leaves each run's GPU watch records unread
    and builds the records without validating them again: the store holds only what was validated
    when it was added, and 10,000 runs are read in a fraction of the time. ``newest_commits=N`` reads
    perf rows only for the runs of the newest N commits (by their newest run) of each set of like facts
    that count (PASS, clean): every run is still returned, the older ones without rows, so counts hold."""
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
    columns = "*" if watch else ", ".join(("id", *(c for c in _RUN_COLUMNS if c not in ("watch", "added"))))
    filters = " WHERE " + " AND ".join(where) if where else ""
    sql = f"SELECT {columns} FROM runs{filters} ORDER BY ts {'DESC' if newest_first else 'ASC'}, id"
    found = conn.execute(sql, args).fetchall()
    perf: dict[int, list[StoredRow]] = {}
    if found:
        # one join, not a list of 10,000 ids: the same runs' rows, in the order they were stored
        if newest_commits is None:
            rows = conn.execute(
                f"SELECT perf.* FROM perf JOIN runs ON runs.id = perf.run_id{filters} ORDER BY perf.rowid", args
            )
        else:
            rows = conn.execute(
                _NEWEST_ROWS.format(filters="".join(f"{w} AND " for w in where)), [*args, newest_commits]
            )
        make = StoredRow if watch else StoredRow.model_construct
        for row in rows:
            perf.setdefault(row["run_id"], []).append(
                make(
                    table=row["tbl"],
                    shape=row["shape"],
                    name=row["name"],
                    stat=row["stat"],
                    metric=row["metric"],
                    direction=row["direction"],
                    values=json.loads(row["run_values"]),
                    median=row["median"],
                    min=row["min"],
                    max=row["max"],
                    cv=row["cv"],
                )
            )
    if watch:
        return [_run(r, perf.get(r["id"], [])) for r in found]
    facts: dict[str, dict] = {}  # like runs share their facts' text: each parsed once
    return [
        StoredRun.model_construct(
            artifact_sha256=r["artifact_sha256"],
            artifact_path=r["artifact_path"],
            target=r["target"],
            topic=r["topic"],
            ticket=r["ticket"],
            host=r["host"],
            facts=facts.setdefault(r["facts"], json.loads(r["facts"])),
            image_digest=r["image_digest"],
            sha=r["sha"],
            ref=r["ref"],
            dirty=None if r["dirty"] is None else bool(r["dirty"]),
            ts=r["ts"],
            verdict=r["verdict"],
            watch=[],
            rows=perf.get(r["id"], []),
        )
        for r in found
    ]


def _run(row: sqlite3.Row, perf: list[StoredRow]) -> StoredRun:
    return StoredRun(
        artifact_sha256=row["artifact_sha256"],
        artifact_path=row["artifact_path"],
        target=row["target"],
        topic=row["topic"],
        ticket=row["ticket"],
        host=row["host"],
        facts=json.loads(row["facts"]),
        image_digest=row["image_digest"],
        sha=row["sha"],
        ref=row["ref"],
        dirty=None if row["dirty"] is None else bool(row["dirty"]),
        ts=row["ts"],
        verdict=row["verdict"],
        watch=[GpuWatch.model_validate(w) for w in json.loads(row["watch"])],
        rows=perf,
    )


def targets(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT coalesce(target, topic) FROM runs ORDER BY 1")]


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
