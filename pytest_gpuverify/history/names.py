"""A store as named on the command line, in an ini key or the environment (a SQLite file, or a PostgreSQL
URL), how messages show it (a URL's password masked), and a PostgreSQL server's faults as one line."""

from __future__ import annotations

import functools
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

CONNECT_S = 10  # how long reaching a PostgreSQL server may take before the history is given up
URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")

StoreName = Path | str  # a SQLite file, or a PostgreSQL URL (a str)


class StoreError(Exception):
    """The store cannot be used; the message names the store and the fix."""


def is_url(name: object) -> bool:
    return isinstance(name, str) and name.split("://", 1)[0].lower() in URL_SCHEMES and "://" in name


SERVICE_SCHEMES = ("http", "https")


def is_service(name: object) -> bool:
    """An ingest service's URL (``gpuverify history serve``, behind its reverse proxy): runs are posted there."""
    return isinstance(name, str) and "://" in name and name.split("://", 1)[0].lower() in SERVICE_SCHEMES


def locate(value: str | Path) -> StoreName:
    """A store as named on the command line, in an ini key or the environment: a URL (a database's or an
    ingest service's) as it is, else a file."""
    text = str(value)
    return text if is_url(text) or is_service(text) else Path(text).expanduser()


def shown(name: StoreName) -> str:
    """The store as messages and pages name it: a URL's password masked."""
    if not is_url(name):
        return str(name)
    try:
        return make_url(str(name)).render_as_string(hide_password=True)
    except ArgumentError:
        return str(name).split("@")[-1]


def engine_url(name: str) -> URL:
    """``postgresql://`` (and ``postgres://``) as SQLAlchemy's ``postgresql+psycopg://``: psycopg 3 is the driver."""
    url = make_url(name)
    return url.set(drivername="postgresql+psycopg") if url.drivername in ("postgresql", "postgres") else url


def is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


@functools.lru_cache(maxsize=16)
def server_engine(url: str) -> Engine:
    return create_engine(engine_url(url), poolclass=NullPool, connect_args={"connect_timeout": CONNECT_S})


def described_server(url: str, exc: BaseException) -> StoreError:
    where = shown(url)
    password = make_url(url).password if "@" in url else None
    text = " ".join(str(exc).split()) or type(exc).__name__
    if password:
        text = text.replace(str(password), "***")
    state = getattr(exc, "sqlstate", None) or ""
    # a failed connection has no SQLSTATE on the client's side: the server's words say which it was
    if state in ("28P01", "28000") or "password authentication failed" in text or "no password supplied" in text:
        return StoreError(
            f"{where}: the server refused the login ({text}). Fix: check the user and password in the URL "
            "(or PGPASSWORD, ~/.pgpass) and the server's pg_hba.conf"
        )
    if state == "3D000" or ("database" in text and "does not exist" in text):
        database = make_url(url).database
        return StoreError(
            f"{where}: no such database ({text}). Fix: createdb {database} on the server, or name another"
        )
    if state == "42501":
        return StoreError(
            f"{where}: permission denied ({text}). Fix: grant the URL's user CREATE on the schema and "
            "SELECT, INSERT on the store's tables"
        )
    if state in ("53100", "53200"):
        return StoreError(f"{where}: the server is out of space ({text}); nothing was stored. Fix: free space there")
    if state.startswith("08") or (not state and type(exc).__name__ == "OperationalError"):
        return StoreError(
            f"{where}: cannot reach the database server ({text}). Fix: start the PostgreSQL server, or correct "
            "the URL's host and port (the firewall must let this machine in)"
        )
    return StoreError(
        f"{where}: the history store failed ({state or type(exc).__name__}: {text}). Fix: check the server's log"
    )
