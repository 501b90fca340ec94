"""The store's file: one SQLite database (the standard library's ``sqlite3``) in WAL mode, its schema
versioned by ``PRAGMA user_version`` and brought up to date by the migrations below when opened.

Writers take SQLite's own file locks: each add is one ``BEGIN IMMEDIATE`` transaction, and a writer
that finds the file locked waits up to :data:`BUSY_S` (``busy_timeout``) instead of failing, so
sessions and ``gpuverify history add`` may write at once. WAL lets readers go on while one writes; it
needs every process on one host (shared memory beside the file), never a network file system.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ENV = "GPUVERIFY_HISTORY"  # names the store where no --store does
BUSY_S = 60.0  # how long a writer waits for another's transaction before giving up

# version -> the statements that bring a store of the version before it to this one
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            artifact_sha256 TEXT NOT NULL UNIQUE,
            artifact_path TEXT NOT NULL,
            target TEXT,
            topic TEXT NOT NULL,
            ticket TEXT,
            host TEXT,
            facts TEXT NOT NULL,
            image_digest TEXT,
            sha TEXT,
            dirty INTEGER,
            ts TEXT NOT NULL,
            verdict TEXT NOT NULL,
            watch TEXT NOT NULL,
            added TEXT NOT NULL)""",
        """CREATE TABLE perf (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            tbl TEXT,
            shape TEXT NOT NULL,
            name TEXT NOT NULL,
            stat TEXT,
            metric TEXT NOT NULL,
            direction TEXT,
            run_values TEXT NOT NULL,
            median REAL NOT NULL,
            min REAL NOT NULL,
            max REAL NOT NULL,
            cv REAL)""",
        "CREATE INDEX perf_run ON perf(run_id)",
    ),
    # 2: the branch or tag a run's commit was on, so history can be read per ref (e.g. main)
    2: (
        "ALTER TABLE runs ADD COLUMN ref TEXT",
        "CREATE INDEX runs_target ON runs(target, ref, ts)",
    ),
}
SCHEMA_VERSION = max(MIGRATIONS)


class StoreError(Exception):
    """The store cannot be used; the message names the file and the fix."""


def connect(path: Path, upto: int = SCHEMA_VERSION) -> sqlite3.Connection:
    """The store at ``path`` (made when missing), migrated to schema ``upto``."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path}: is a folder. Fix: name a file, e.g. {path / 'history.db'}")
    if not path.parent.is_dir():
        raise StoreError(f"{path}: its folder does not exist. Fix: mkdir -p {path.parent}")
    new = not path.exists()
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path, upto)
        if new:
            share_with_folder_group(path)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable history store ({exc}). Fix: name another file, or restore it "
                         "from an export (gpuverify history import)") from None
    conn.row_factory = sqlite3.Row
    return conn


def open_store(path: Path, reading: bool) -> sqlite3.Connection:
    """The store at ``path``; one that is only read must exist already (StoreError names the fix)."""
    if reading and not Path(path).exists():
        raise StoreError(f"{path}: no history store there. Fix: name it with --store or ${ENV}, or add runs "
                         "first (gpuverify history add, or pytest --gpu-history FILE)")
    return connect(path)


def share_with_folder_group(path: Path) -> None:
    """A new store in a folder its group may write (a team's folder) is group-writable too, whatever the
    creating member's umask: SQLite gives its -wal and -shm files the database file's mode."""

    if os.stat(path.parent).st_mode & stat.S_IWGRP:
        os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | stat.S_IRGRP | stat.S_IWGRP)


def _migrate(conn: sqlite3.Connection, path: Path, upto: int) -> None:
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"{path}: history schema {version} is newer than this gpuverify's "
                             f"({SCHEMA_VERSION}). Fix: upgrade pytest-gpuverify")
        for step in range(version + 1, upto + 1):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step}")


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, its lock taken at the start (``BEGIN IMMEDIATE``): two writers queue."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
