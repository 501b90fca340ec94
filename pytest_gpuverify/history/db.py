"""The store's database, through SQLAlchemy Core: a SQLite file by default (embedded, WAL), or a PostgreSQL
database named by a ``postgresql://`` URL (a team's store that many CI runners write at once). The schema
(``schema.py``) is versioned and brought up to date by Alembic's migrations (``migrations/``) when opened.

SQLite: writers take SQLite's own file locks: each add is one ``BEGIN IMMEDIATE`` transaction, and a writer
that finds the file locked waits up to :data:`BUSY_S` (``busy_timeout``) instead of failing. Readers open
the file read-only (a ``mode=ro`` URI) and take no write lock: WAL lets them read the last committed state
while one writes, so they never wait for a writer, and a store they may not write is still read. WAL needs
every process on one host (shared memory beside the file), never a network file system.

PostgreSQL: MVCC keeps readers off writers' locks; writers of the same artifact meet at its sha256's unique
key (``INSERT ... ON CONFLICT DO NOTHING``: the second stores nothing), and migrations take an advisory lock.

Every fault (a damaged, read-only, locked or full file, a newer schema, a server that cannot be reached or
refuses the login) becomes one :class:`StoreError` whose message names the store (a URL's password masked)
and the fix (:func:`guard`).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from pytest_gpuverify.history.names import (  # noqa: F401 - the store's names, where callers find them
    StoreError,
    StoreName,
    described_server,
    engine_url,
    is_postgres,
    is_service,
    is_url,
    locate,
    server_engine,
    shown,
)

ENV = "GPUVERIFY_HISTORY"  # names the store where no --store does
BUSY_S = 60.0  # how long a writer waits for another's transaction before giving up
READ_BUSY_S = 1.0  # a reader never waits for a writer (WAL); this covers SQLite's brief recovery of a -shm
SCHEMA_VERSION = 5  # the newest migration (migrations/versions/000N_*.py, revision "000N")
MIGRATIONS = "pytest_gpuverify.history:migrations"
_MIGRATION_LOCK = 0x67707576  # PostgreSQL advisory lock: one process migrates a store at a time
_WRITING = "gpuverify_writing"  # in a connection's info while transaction() holds it: SQLite's BEGIN IMMEDIATE


# --- faults as one line ---


def described(name: StoreName, exc: BaseException, writing: bool = True) -> StoreError:
    """``exc`` (a database error, wrapped by SQLAlchemy or not, or an ``OSError`` of the store's files) as one
    line naming the store and the fix."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    if is_url(name):
        return described_server(str(name), exc)
    path = Path(name)
    code = getattr(exc, "sqlite_errorname", "") or ""
    errno = getattr(exc, "errno", None)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return StoreError(
            f"{path}: not a usable history store ({text}): the file is damaged. Fix: restore it "
            "from an export (gpuverify history import) into a new file, or name another file"
        )
    if code.startswith("SQLITE_FULL") or errno == 28:
        return StoreError(
            f"{path}: the disk is full ({text}); nothing was stored. Fix: free space on its file system "
            f"(df {path.parent}), or name a store elsewhere"
        )
    if code.startswith("SQLITE_READONLY") or errno in (1, 13, 30):
        return StoreError(
            f"{path}: cannot write the store ({text}). Fix: get write access to the file and its folder "
            "(SQLite writes -wal and -shm files beside it), or name another file with --store"
        )
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        wait = f"for over {BUSY_S:g} s" if writing else "by a writer"
        return StoreError(
            f"{path}: locked {wait} ({text}): another process holds its write lock. Fix: run again when "
            f"it ends (fuser {path} names it)"
        )
    if (
        code.startswith("SQLITE_CANTOPEN")
        and writing
        and path.exists()
        and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
    ):
        return StoreError(
            f"{path}: cannot write the store ({text}: the file or its folder is read-only). Fix: get write "
            "access to the file and its folder (SQLite writes -wal and -shm files beside it), or name another "
            "file with --store"
        )
    if code.startswith("SQLITE_CANTOPEN"):
        return StoreError(f"{path}: cannot be opened ({text}). Fix: check the file's and its folder's permissions")
    return StoreError(
        f"{path}: the history store failed ({code or type(exc).__name__}: {text}). Fix: check the file, "
        "or restore it from an export (gpuverify history import)"
    )


@contextmanager
def guard(name: StoreName, writing: bool = True) -> Iterator[None]:
    """Every database error within as a one-line :class:`StoreError` (an OS error there may be another
    file's, an export's output: it is left to name its own file)."""
    try:
        yield
    except (sqlite3.Error, SQLAlchemyError) as exc:
        raise described(name, exc, writing) from None


# --- connections ---


def _begin(conn: Connection) -> None:
    # pysqlite's own BEGIN is deferred and late; the store's writers take the write lock at once (two queue)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get(_WRITING) else "BEGIN")


@functools.lru_cache(maxsize=16)
def _sqlite_engine(path: str, reading: bool) -> Engine:
    """An engine whose every connection is made by the store's own opener (busy timeouts, WAL, read-only)."""
    opener = (lambda: _read_only(Path(path))) if reading else (lambda: _writable(Path(path)))
    engine = create_engine("sqlite+pysqlite://", creator=opener, poolclass=NullPool)
    event.listen(engine, "begin", _begin)
    return engine


def _writable(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_S, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _read_only(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=READ_BUSY_S, isolation_level=None, check_same_thread=False)
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
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        raise


def _opened(name: StoreName, reading: bool) -> Connection:
    if is_url(name):
        try:
            engine = server_engine(str(name))
        except ImportError as exc:  # the driver is the team extra's, not a core dependency
            raise StoreError(
                f"{shown(name)}: no PostgreSQL driver here ({exc}). Fix: pip install 'pytest-gpuverify[team]' "
                "(psycopg 3)"
            ) from None
        except ArgumentError as exc:
            raise StoreError(
                f"{shown(name)}: not a database URL ({exc}). Fix: postgresql://USER@HOST:PORT/DB"
            ) from None
        return engine.connect()
    return _sqlite_engine(str(name), reading).connect()


def _close(conn: Connection | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except (sqlite3.Error, SQLAlchemyError):
            pass


def _not_a_service(name: StoreName) -> None:
    if is_service(name):
        raise StoreError(
            f"{name}: an ingest service takes runs (history add, --gpu-history) and answers reads (history show, "
            "compare --history, report --history), nothing else. Fix: name the service's own store: its file, or its "
            "postgresql:// URL"
        )


def _file_problem(path: Path) -> StoreError | None:
    if path.is_dir():
        return StoreError(f"{path}: is a folder. Fix: name a file, e.g. {path / 'history.db'}")
    return None


def connect(name: StoreName, upto: int = SCHEMA_VERSION) -> Connection:
    """The store ``name`` (a SQLite file, made when missing; or a PostgreSQL URL), migrated to schema
    ``upto``: a writer's connection."""
    _not_a_service(name)
    new = False
    if not is_url(name):
        name = Path(name)
        problem = _file_problem(name)
        if problem is None and not name.parent.is_dir():
            problem = StoreError(f"{name}: its folder does not exist. Fix: mkdir -p {name.parent}")
        if problem is not None:
            raise problem
        new = not name.exists()
    conn = None
    try:
        conn = _opened(name, reading=False)
        _check_version(conn, name)
        if schema_version(conn) < upto:
            migrate(conn, name, upto)
        if conn.in_transaction():
            conn.commit()
        if new:
            share_with_folder_group(Path(name))
    except StoreError:
        _close(conn)
        raise
    except (sqlite3.Error, SQLAlchemyError, OSError) as exc:
        _close(conn)
        raise described(name, exc, writing=True) from None
    return conn


def connect_reading(name: StoreName) -> Connection:
    """The store ``name`` opened for reading: a SQLite file read-only (no write lock is ever taken, so a
    writer's open transaction never makes it wait, and a file or folder the user may not write is read).
    A store of an older schema is brought up to date first by a writer's connection (once)."""
    _not_a_service(name)
    if not is_url(name):
        name = Path(name)
        problem = _file_problem(name)
        if problem is not None:
            raise problem
    conn = None
    try:
        conn = _opened(name, reading=True)
        version = schema_version(conn)
        if version == 0 and not _has_tables(conn):
            what = "an empty file, no history store in it" if not is_url(name) else "no history store there"
            raise StoreError(
                f"{shown(name)}: {what}. Fix: add runs first (gpuverify history add), or name the store's "
                + ("file" if not is_url(name) else "database")
            )
        _check_version(conn, name)
        if version < SCHEMA_VERSION:
            _close(conn)
            conn = None
            try:
                connect(name).close()
            except StoreError as exc:
                raise StoreError(
                    f"{shown(name)}: history schema {version} is older than this gpuverify's ({SCHEMA_VERSION}) "
                    f"and could not be brought up to date: {str(exc).removeprefix(f'{shown(name)}: ')}"
                ) from None
            conn = _opened(name, reading=True)
    except StoreError:
        _close(conn)
        raise
    except (sqlite3.Error, SQLAlchemyError, OSError) as exc:
        _close(conn)
        raise described(name, exc, writing=False) from None
    return conn


def open_store(name: StoreName, reading: bool) -> Connection:
    """The store ``name``: for reading when ``reading`` (a file must exist already: StoreError names the fix)."""
    _not_a_service(name)
    if reading and not is_url(name) and not Path(name).exists():
        raise StoreError(
            f"{name}: no history store there. Fix: name it with --store or ${ENV}, or add runs "
            "first (gpuverify history add, or pytest --gpu-history FILE)"
        )
    return connect_reading(name) if reading else connect(name)


def share_with_folder_group(path: Path) -> None:
    """A new store in a folder its group may write (a team's folder) is group-writable too, whatever the
    creating member's umask: SQLite gives its -wal and -shm files the database file's mode."""

    if os.stat(path.parent).st_mode & stat.S_IWGRP:
        os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | stat.S_IRGRP | stat.S_IWGRP)


# --- the schema's version and its migrations ---


def _has_tables(conn: Connection) -> bool:
    if is_postgres(conn):
        return conn.exec_driver_sql("SELECT to_regclass('runs') IS NOT NULL").scalar() is True
    return bool(conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar())


def _alembic_revision(conn: Connection) -> str | None:
    if is_postgres(conn):
        present = conn.exec_driver_sql("SELECT to_regclass('alembic_version') IS NOT NULL").scalar()
    else:
        present = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
        ).scalar()
    if not present:
        return None
    return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def schema_version(conn: Connection) -> int:
    """The store's schema: Alembic's revision ("0003" is 3); a SQLite store from before Alembic keeps it in
    ``PRAGMA user_version`` (which the migrations keep up too, for an older gpuverify to read)."""
    version = int(conn.exec_driver_sql("PRAGMA user_version").scalar() or 0) if not is_postgres(conn) else 0
    revision = _alembic_revision(conn)
    if revision is not None:
        version = max(version, int(revision) if revision.isdigit() else SCHEMA_VERSION + 1)
    return version


def _check_version(conn: Connection, name: StoreName) -> None:
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{shown(name)}: history schema {version} is newer than this gpuverify's "
            f"({SCHEMA_VERSION}). Fix: upgrade pytest-gpuverify"
        )


def migrate(conn: Connection, name: StoreName, upto: int = SCHEMA_VERSION) -> None:
    """Bring the store to schema ``upto`` with Alembic, in one transaction under the write lock (SQLite's, or
    an advisory lock on PostgreSQL): the version is read again there, since another may have migrated it."""
    from alembic import command
    from alembic.config import Config

    with transaction(conn):
        if is_postgres(conn):
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        _check_version(conn, name)
        version = schema_version(conn)
        if version >= upto:
            return
        config = Config()
        config.set_main_option("script_location", MIGRATIONS)
        config.attributes["connection"] = conn
        if version and _alembic_revision(conn) is None:  # a SQLite store of before Alembic: its version as a revision
            command.stamp(config, f"{version:04d}")
        command.upgrade(config, f"{upto:04d}")


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """One write transaction, its lock taken at the start (SQLite's ``BEGIN IMMEDIATE``: two writers queue),
    committed at the end, rolled back on any error."""
    if conn.in_transaction():  # a read's snapshot ends before the write begins
        conn.commit()
    conn.info[_WRITING] = True
    try:
        with conn.begin():
            yield conn
    finally:
        conn.info.pop(_WRITING, None)
