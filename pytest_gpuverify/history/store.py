"""Writing and reading :class:`StoredRun` records (SQLAlchemy Core, on SQLite and PostgreSQL alike): one
transaction per run, a run known by its artifact's sha256 (adding the same artifact twice, from one writer or
from many at once, keeps one: the insert does nothing on that key's conflict)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Text, and_, cast, func, literal, or_, select
from sqlalchemy import insert as plain_insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import RowMapping

from pytest_gpuverify.history.db import is_postgres, transaction
from pytest_gpuverify.history.health import GpuRun, store_gpu_runs
from pytest_gpuverify.history.records import StoredRow, StoredRun
from pytest_gpuverify.history.schema import gpu_runs, perf
from pytest_gpuverify.history.schema import runs as runs_table
from pytest_gpuverify.records.artifact import GpuWatch, utc_now

# the columns a trend reads (no watch records, no time added, not who signed or sent it: only the runner's
# label, which partitions a trend's series)
_TREND_COLUMNS = [c for c in runs_table.c if c.name not in ("watch", "added", "signer", "ci_run_url", "uploaded")]


# one statement each, its values bound at execution: compiled once, not once per run
_NEW_RUN_PG = (
    postgresql.insert(runs_table).on_conflict_do_nothing(index_elements=["artifact_sha256"]).returning(runs_table.c.id)
)
_NEW_RUN_SQLITE = sqlite.insert(runs_table).on_conflict_do_nothing(index_elements=["artifact_sha256"])


def insert(conn: Connection, run: StoredRun) -> bool:
    """Store ``run``; False when the store already holds its artifact (by sha256)."""
    return insert_many(conn, [run]) == 1


def insert_many(conn: Connection, found: list[StoredRun]) -> int:
    """Store ``found`` in one transaction (one wait for the write lock); how many were new."""
    if is_postgres(conn):  # rows locked in one order by every writer: two imports of the same runs never deadlock
        found = sorted(found, key=lambda run: run.artifact_sha256)
    with transaction(conn):
        return sum(_insert(conn, run) for run in found)


def _insert(conn: Connection, run: StoredRun) -> bool:
    values = {
        "artifact_sha256": run.artifact_sha256,
        "artifact_path": run.artifact_path,
        "target": run.target,
        "topic": run.topic,
        "ticket": run.ticket,
        "host": run.host,
        "facts": json.dumps(run.facts, sort_keys=True),
        "image_digest": run.image_digest,
        "sha": run.sha,
        "ref": run.ref,
        "dirty": None if run.dirty is None else int(run.dirty),
        "ts": run.ts,
        "verdict": run.verdict,
        "watch": json.dumps([w.model_dump(mode="json") for w in run.watch]),
        "added": utc_now(),
        "signer": run.signer,
        "ci_run_url": run.ci_run_url,
        "runner": run.runner,
        "uploaded": run.uploaded,
    }
    if is_postgres(conn):
        run_id = conn.execute(_NEW_RUN_PG, values).scalar()
    else:  # SQLite before 3.35 has no RETURNING; its cursor says the same
        result = conn.execute(_NEW_RUN_SQLITE, values)
        run_id = result.lastrowid if result.rowcount else None
    if run_id is None:
        return False
    store_gpu_runs(conn, run_id, run.ts, run.gpus)
    if run.rows:
        conn.execute(
            plain_insert(perf),
            [
                {
                    "run_id": run_id,
                    "tbl": r.table,
                    "shape": r.shape,
                    "name": r.name,
                    "stat": r.stat,
                    "metric": r.metric,
                    "direction": r.direction,
                    "run_values": json.dumps(r.values),
                    "median": r.median,
                    "min": r.min,
                    "max": r.max,
                    "cv": r.cv,
                    "pos": pos,
                }
                for pos, r in enumerate(run.rows)
            ],
        )
    return True


def _newest_rows(where: list, newest_commits: int):
    """The perf rows of the runs of each like-facts set's newest N commits (a run without a commit is its own)."""
    made = func.coalesce(runs_table.c.sha, literal("run ") + cast(runs_table.c.id, Text))
    counted = (
        select(runs_table.c.id, made.label("made"), runs_table.c.facts, runs_table.c.image_digest, runs_table.c.ts)
        .where(*where, runs_table.c.verdict == "PASS", func.coalesce(runs_table.c.dirty, 0) == 0)
        .cte("counted")
    )
    newness = func.row_number().over(
        partition_by=(counted.c.facts, counted.c.image_digest), order_by=(func.max(counted.c.ts).desc(), counted.c.made)
    )
    commits = (
        select(counted.c.made, counted.c.facts, counted.c.image_digest, newness.label("newness"))
        .group_by(counted.c.made, counted.c.facts, counted.c.image_digest)
        .cte("commits")
    )
    return (
        select(perf)
        .join(counted, counted.c.id == perf.c.run_id)
        .join(
            commits,
            and_(
                commits.c.made == counted.c.made,
                commits.c.facts == counted.c.facts,
                commits.c.image_digest.is_not_distinct_from(counted.c.image_digest),
            ),
        )
        .where(commits.c.newness <= newest_commits)
        .order_by(perf.c.run_id, perf.c.pos)
    )


def _where(target: str | None, ref: str | None, verdict: str | None, since: str | None) -> list[Any]:
    where: list[Any] = []
    if target is not None:
        where.append(
            or_(runs_table.c.target == target, and_(runs_table.c.target.is_(None), runs_table.c.topic == target))
        )
    if ref is not None:
        where.append(runs_table.c.ref == ref)
    if verdict is not None:
        where.append(runs_table.c.verdict == verdict)
    if since is not None:
        where.append(runs_table.c.ts >= since)
    return where


def runs(
    conn: Connection,
    target: str | None = None,
    ref: str | None = None,
    verdict: str | None = None,
    newest_first: bool = False,
    watch: bool = True,
    newest_commits: int | None = None,
    since: str | None = None,
) -> list[StoredRun]:
    """The stored runs of ``target`` (its name, else its topic), on ``ref``, of ``verdict``, from ``since``
    (an ISO time) on, by time.

    ``watch=False`` (trends: ``history show``, the report) leaves each run's GPU watch records unread
    and builds the records without validating them again: the store holds only what was validated
    when it was added, and 10,000 runs are read in a fraction of the time. ``newest_commits=N`` reads
    perf rows only for the runs of the newest N commits (by their newest run) of each set of like facts
    that count (PASS, clean): every run is still returned, the older ones without rows, so counts hold."""
    return runs_page(conn, target, ref, verdict, newest_first, watch, newest_commits, since)[0]


def runs_page(
    conn: Connection,
    target: str | None = None,
    ref: str | None = None,
    verdict: str | None = None,
    newest_first: bool = False,
    watch: bool = True,
    newest_commits: int | None = None,
    since: str | None = None,
    after: tuple[str, int] | None = None,
    limit: int | None = None,
) -> tuple[list[StoredRun], tuple[str, int] | None]:
    """:func:`runs`, ``limit`` runs at a time: those past ``after`` (the ``(ts, id)`` the previous page
    returned as its next), and the next page's ``after`` (None at the last). Pages follow the runs' order by
    (time, id), not a position: a run added meanwhile neither repeats nor hides another. ``newest_commits``
    counts over every run asked for, not the page's."""
    where = _where(target, ref, verdict, since)
    ts = runs_table.c.ts.desc() if newest_first else runs_table.c.ts.asc()
    page = list(where)
    if after is not None:
        at, run_id = after
        later = runs_table.c.ts < at if newest_first else runs_table.c.ts > at
        page.append(or_(later, and_(runs_table.c.ts == at, runs_table.c.id > run_id)))
    columns = [runs_table] if watch else _TREND_COLUMNS
    query = select(*columns).where(*page).order_by(ts, runs_table.c.id)
    if limit is not None:
        query = query.limit(limit + 1)  # one more: whether a next page exists
    found = conn.execute(query).mappings().all()
    more = limit is not None and len(found) > limit
    found = found[:limit] if limit is not None else found
    by_run: dict[int, list[StoredRow]] = {}
    if found:
        if newest_commits is None:
            # one join, not a list of 10,000 ids: the same runs' rows, each run's in the order of its artifact
            rows_of = (
                select(perf)
                .join(runs_table, runs_table.c.id == perf.c.run_id)
                .where(*page)
                .order_by(perf.c.run_id, perf.c.pos)
            )
        else:
            rows_of = _newest_rows(where, newest_commits)
        if limit is not None:  # a page's runs only (at most ``limit`` ids)
            rows_of = rows_of.where(perf.c.run_id.in_([r["id"] for r in found]))
        make = StoredRow if watch else StoredRow.model_construct
        for row in conn.execute(rows_of).mappings():
            by_run.setdefault(row["run_id"], []).append(
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
    nxt = (found[-1]["ts"], int(found[-1]["id"])) if more else None
    if watch:  # the whole run (an export's): what it did to its GPUs too
        gpus = _gpu_runs(conn, page) if found else {}
        made = [
            StoredRun(
                **_run_fields(r, json.loads(r["facts"]), by_run.get(r["id"], []), watch=True),
                gpus=gpus.get(r["id"], []),
            )
            for r in found
        ]
        return made, nxt
    facts: dict[str, dict] = {}  # like runs share their facts' text: each parsed once
    return [
        StoredRun.model_construct(
            **_run_fields(r, facts.setdefault(r["facts"], json.loads(r["facts"])), by_run.get(r["id"], []))
        )
        for r in found
    ], nxt


def _gpu_runs(conn: Connection, where: list) -> dict[int, list[GpuRun]]:
    """The runs' health rows (gpu_runs), by run, in one join."""
    query = (
        select(gpu_runs)
        .join(runs_table, runs_table.c.id == gpu_runs.c.run_id)
        .where(*where)
        .order_by(gpu_runs.c.run_id, gpu_runs.c.gpu_index)
    )
    found: dict[int, list[GpuRun]] = {}
    for g in conn.execute(query).mappings():
        found.setdefault(g["run_id"], []).append(
            GpuRun(
                uuid=g["gpu_uuid"],
                index=g["gpu_index"],
                name=g["gpu_name"],
                host=g["host"],
                timed_out=bool(g["timed_out"]),
                interrupted=g["interrupted"],
                container_died=bool(g["container_died"]),
                no_gpu=bool(g["no_gpu"]),
                ecc_corrected=g["ecc_corrected"],
                ecc_uncorrected=g["ecc_uncorrected"],
            )
        )
    return found


def _run_fields(row: RowMapping, facts: dict, rows: list[StoredRow], watch: bool = False) -> dict:
    """A stored run's fields from its row: validated (``StoredRun(**...)``) or as they are (the fast
    path without the watch, ``model_construct``) alike. The fast path's query leaves out the upload's
    provenance columns but the runner, which then read None."""
    return {
        "artifact_sha256": row["artifact_sha256"],
        "artifact_path": row["artifact_path"],
        "target": row["target"],
        "topic": row["topic"],
        "ticket": row["ticket"],
        "host": row["host"],
        "facts": facts,
        "image_digest": row["image_digest"],
        "sha": row["sha"],
        "ref": row["ref"],
        "dirty": None if row["dirty"] is None else bool(row["dirty"]),
        "ts": row["ts"],
        "verdict": row["verdict"],
        "watch": [GpuWatch.model_validate(w) for w in json.loads(row["watch"])] if watch else [],
        "rows": rows,
        "signer": row.get("signer"),
        "ci_run_url": row.get("ci_run_url"),
        "runner": row.get("runner"),
        "uploaded": row.get("uploaded"),
    }


def targets(conn: Connection) -> list[str]:
    name = func.coalesce(runs_table.c.target, runs_table.c.topic)
    return list(conn.execute(select(name).distinct().order_by(name)).scalars())


def count(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(runs_table)).scalar_one())
