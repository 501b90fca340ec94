"""The store's file: one SQLite database (the standard library's ``sqlite3``) in WAL mode, its schema
versioned by ``PRAGMA user_version`` and brought up to date by the migrations below when opened.

Writers take SQLite's own file locks: each add is one ``BEGIN IMMEDIATE`` transaction, and a writer
that finds the file locked waits up to :data:`BUSY_S` (``busy_timeout``) instead of failing, so
sessions and ``gpuverify history add`` may write at once. Readers open the file read-only (a
``mode=ro`` URI) and take no write lock: WAL lets them read the last committed state while one
writes, so they never wait for a writer, and a store they may not write is still read. WAL needs
every process on one host (shared memory beside the file), never a network file system.

Every fault of the file (damaged, read-only, locked past the busy timeout, a full disk, a newer
schema) becomes one :class:`StoreError` whose message names the file and the fix (:func:`guard`).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote

ENV = "GPUVERIFY_HISTORY"  # names the store where no --store does
BUSY_S = 60.0  # how long a writer waits for another's transaction before giving up
READ_BUSY_S = 1.0  # a reader never waits for a writer (WAL); this covers SQLite's brief recovery of a -shm

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


def described(path: Path, exc: BaseException, writing: bool = True) -> StoreError:
    """``exc`` (a ``sqlite3.Error`` or an ``OSError`` of the store's files) as one line naming the file and the fix."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    errno = getattr(exc, "errno", None)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return StoreError(
            f"{path}: not a usable history store ({text}): the file is damaged. Fix: restore it "
            "from an export (gpuverify history import) into a new file, or name another file"
        )
    if name.startswith("SQLITE_FULL") or errno == 28:
        return StoreError(
            f"{path}: the disk is full ({text}); nothing was stored. Fix: free space on its file system "
            f"(df {path.parent}), or name a store elsewhere"
        )
    if name.startswith("SQLITE_READONLY") or errno in (1, 13, 30):
        return StoreError(
            f"{path}: cannot write the store ({text}). Fix: get write access to the file and its folder "
            "(SQLite writes -wal and -shm files beside it), or name another file with --store"
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        wait = f"for over {BUSY_S:g} s" if writing else "by a writer"
        return StoreError(
            f"{path}: locked {wait} ({text}): another process holds its write lock. Fix: run again when "
            f"it ends (fuser {path} names it)"
        )
    if (
        name.startswith("SQLITE_CANTOPEN")
        and writing
        and path.exists()
        and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
    ):
        return StoreError(
            f"{path}: cannot write the store ({text}: the file or its folder is read-only). Fix: get write "
            "access to the file and its folder (SQLite writes -wal and -shm files beside it), or name another "
            "file with --store"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return StoreError(f"{path}: cannot be opened ({text}). Fix: check the file's and its folder's permissions")
    return StoreError(
        f"{path}: the history store failed ({name or type(exc).__name__}: {text}). Fix: check the file, "
        "or restore it from an export (gpuverify history import)"
    )


@contextmanager
def guard(path: Path, writing: bool = True) -> Iterator[None]:
    """Every SQLite error within as a one-line :class:`StoreError` (an OS error there may be another
    file's, an export's output: it is left to name its own file)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise described(Path(path), exc, writing) from None


def _raise(path: Path, exc: BaseException, writing: bool) -> NoReturn:
    raise described(path, exc, writing) from None


def connect(path: Path, upto: int = SCHEMA_VERSION) -> sqlite3.Connection:
    """The store at ``path`` (made when missing), migrated to schema ``upto``: a writer's connection."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path}: is a folder. Fix: name a file, e.g. {path / 'history.db'}")
    if not path.parent.is_dir():
        raise StoreError(f"{path}: its folder does not exist. Fix: mkdir -p {path.parent}")
    new = not path.exists()
    conn = None
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _check_version(conn, path)
        if schema_version(conn) < upto:
            _migrate(conn, path, upto)
        if new:
            share_with_folder_group(path)
    except StoreError:
        _close(conn)
        raise
    except (sqlite3.Error, OSError) as exc:
        _close(conn)
        _raise(path, exc, writing=True)
    conn.row_factory = sqlite3.Row
    return conn


def connect_reading(path: Path) -> sqlite3.Connection:
    """The store at ``path`` opened read-only: no write lock is ever taken, so a writer's open transaction
    never makes it wait, and a file (or folder) the user may not write is read. A store of an older
    schema is brought up to date first by a writer's connection (once)."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path}: is a folder. Fix: name a file, e.g. {path / 'history.db'}")
    conn = None
    try:
        conn = _read_only(path)
        version = schema_version(conn)
        if version == 0 and not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise StoreError(
                f"{path}: an empty file, no history store in it. Fix: add runs first (gpuverify history "
                "add), or name the store's file"
            )
        _check_version(conn, path)
        if version < SCHEMA_VERSION:
            conn.close()
            conn = None
            try:
                connect(path).close()
            except StoreError as exc:
                raise StoreError(
                    f"{path}: history schema {version} is older than this gpuverify's ({SCHEMA_VERSION}) "
                    f"and could not be brought up to date: {str(exc).removeprefix(f'{path}: ')}"
                ) from None
            conn = _read_only(path)
    except StoreError:
        _close(conn)
        raise
    except (sqlite3.Error, OSError) as exc:
        _close(conn)
        _raise(path, exc, writing=False)
    conn.row_factory = sqlite3.Row
    return conn


def _read_only(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=READ_BUSY_S, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(READ_BUSY_S * 1000)}")
        conn.execute("PRAGMA user_version").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        shared = [Path(f"{path}-wal"), Path(f"{path}-shm")]
        cannot = getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))
        if cannot and path.is_file() and not any(p.exists() for p in shared):
            # No writer has the file open (its -wal is gone with the last one) and the folder is not ours to
            # write a -shm in (a read-only folder or file system): read the file as it stands (SQLite's
            # immutable mode; a writer starting meanwhile would need that folder's write access too).
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        raise


def _close(conn) -> None:
    if conn is not None:
        try:
            conn.close()
        except sqlite3.Error:
            pass


def open_store(path: Path, reading: bool) -> sqlite3.Connection:
    """The store at ``path``: read-only when ``reading`` (it must exist already: StoreError names the fix)."""
    if reading and not Path(path).exists():
        raise StoreError(
            f"{path}: no history store there. Fix: name it with --store or ${ENV}, or add runs "
            "first (gpuverify history add, or pytest --gpu-history FILE)"
        )
    return connect_reading(path) if reading else connect(path)


def share_with_folder_group(path: Path) -> None:
    """A new store in a folder its group may write (a team's folder) is group-writable too, whatever the
    creating member's umask: SQLite gives its -wal and -shm files the database file's mode."""

    if os.stat(path.parent).st_mode & stat.S_IWGRP:
        os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | stat.S_IRGRP | stat.S_IWGRP)


def _check_version(conn: sqlite3.Connection, path: Path) -> None:
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: history schema {version} is newer than this gpuverify's "
            f"({SCHEMA_VERSION}). Fix: upgrade pytest-gpuverify"
        )


def _migrate(conn: sqlite3.Connection, path: Path, upto: int) -> None:
    with transaction(conn):  # the version read again under the write lock: another may have migrated it
        _check_version(conn, path)
        version = schema_version(conn)
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
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite ends some failed transactions itself (a full disk)
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the first error is the one to report
        raise
