"""A session's artifacts added to the history store (``--gpu-history FILE|URL`` / ini ``gpu_history``):
the engine's half, without pytest. Each artifact is added as its target ends (written by then), so a
session killed later keeps what it finished in the store too; the session's end adds any it has not
and says the totals in one line. A store that cannot be used (damaged, read-only, locked past the busy
timeout, a full disk) costs the history only, and says so in one line: ``history not kept: <the file,
what is wrong, the fix>``."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

from pytest_gpuverify.history.add import ADDED, KNOWN, REFUSED, Added, add_files
from pytest_gpuverify.history.db import StoreError, StoreName, connect, guard, is_url, shown
from pytest_gpuverify.history.names import is_service


class SessionHistory:
    """The session's adds to one store: each artifact once, the counts over the session."""

    def __init__(self, store: StoreName, ref: str | None = None) -> None:
        self.store, self.ref = store, ref
        self.results: list[Added] = []
        self.tried: set[Path] = set()
        self.problem: str | None = None  # the first "history not kept" of the session

    def add(self, artifacts: Iterable[Path]) -> None:
        """Add those not tried yet (an artifact not on this machine waits: a later call may find it)."""
        paths = [p for p in artifacts if p not in self.tried and p.is_file()]
        if not paths or (self.problem is not None and (is_url(self.store) or is_service(self.store))):
            return  # a server not reached once is not waited for again at each target's end (CONNECT_S each)
        self.tried.update(paths)
        if is_service(self.store):
            from pytest_gpuverify.history.client import ServiceError, post_files

            try:
                self.results += post_files(str(self.store), paths, self.ref)
            except (ServiceError, OSError) as exc:
                self.problem = self.problem or f"history not kept: {exc}"
            return
        try:
            with closing(connect(self.store)) as conn, guard(self.store):
                self.results += add_files(conn, paths, self.ref)
        except (StoreError, OSError) as exc:  # the session's own verdicts and exit status stand
            self.problem = self.problem or f"history not kept: {exc}"

    def lines(self) -> tuple[list[str], bool]:
        """Lines for the terminal (the totals; a line per artifact refused), and whether any went wrong."""
        if self.problem is not None:
            return [self.problem], True
        if not self.results:
            return [], False
        counts = {o: sum(r.outcome == o for r in self.results) for o in (ADDED, KNOWN, REFUSED)}
        lines = [
            f"history {shown(self.store)}: {counts[ADDED]} artifact(s) added, {counts[KNOWN]} already stored, "
            f"{counts[REFUSED]} refused"
        ]
        return lines + [f"history: {r.line()}" for r in self.results if r.outcome == REFUSED], bool(counts[REFUSED])


def add_session_artifacts(
    store: StoreName, artifacts: Iterable[Path], ref: str | None = None
) -> tuple[list[str], bool]:
    """Lines for the terminal (what was added; a line per artifact refused), and whether any went wrong."""
    history = SessionHistory(store, ref)
    history.add(artifacts)
    return history.lines()
