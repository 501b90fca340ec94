"""Where the readers (``history show``, ``compare --history``, ``report --history``) take a store's runs from:
the store itself (a SQLite file, a ``postgresql://`` URL) or a team's ingest service (``https://...``, read
through its ``GET /v1/runs``). Both answer the same two questions, so the readers have one copy of their logic."""

from __future__ import annotations

from typing import Protocol

from pytest_gpuverify.history.db import StoreName, guard, open_store
from pytest_gpuverify.history.names import is_service, shown
from pytest_gpuverify.history.records import StoredRun
from pytest_gpuverify.history.store import runs, targets


class Reader(Protocol):
    name: str  # the store or service as messages name it

    def runs(
        self,
        target: str | None = None,
        ref: str | None = None,
        verdict: str | None = None,
        newest_first: bool = False,
        watch: bool = True,
        newest_commits: int | None = None,
        since: str | None = None,
    ) -> list[StoredRun]:
        """store.runs' answer: the stored runs asked for, by time."""
        ...

    def targets(self) -> list[str]: ...

    def close(self) -> None: ...


class StoreReader:
    """A store's runs read from its database (read-only: a writer never makes it wait)."""

    def __init__(self, store: StoreName) -> None:
        self.store, self.name = store, shown(store)
        self.conn = open_store(store, reading=True)

    def runs(
        self,
        target: str | None = None,
        ref: str | None = None,
        verdict: str | None = None,
        newest_first: bool = False,
        watch: bool = True,
        newest_commits: int | None = None,
        since: str | None = None,
    ) -> list[StoredRun]:
        with guard(self.store, writing=False):
            return runs(self.conn, target, ref, verdict, newest_first, watch, newest_commits, since)

    def targets(self) -> list[str]:
        with guard(self.store, writing=False):
            return targets(self.conn)

    def close(self) -> None:
        self.conn.close()


def open_reader(store: StoreName) -> Reader:
    """The store ``store`` for reading, or the ingest service it names; StoreError (one line, the fix) when it
    cannot be read."""
    if is_service(store):
        from pytest_gpuverify.history.client import ServiceReader

        return ServiceReader(str(store))
    return StoreReader(store)
