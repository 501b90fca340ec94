"""``gpuverify history add|show|export|import`` and ``gpuverify compare --history``: the store's file from
``--store``, else ``$GPUVERIFY_HISTORY``, else :data:`DEFAULT_STORE`. Exits: 0 done, 1 something
refused, skipped or REGRESSED, 2 bad input or a store that cannot be used."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import closing
from functools import wraps
from pathlib import Path

from sqlalchemy import Connection

from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import Refused, checked, exit_code
from pytest_gpuverify.compare.core import DEFAULT_RULE, Rule
from pytest_gpuverify.history.add import ADDED, KNOWN, REFUSED, add_files
from pytest_gpuverify.history.db import ENV, StoreError, StoreName, guard, locate, open_store, shown
from pytest_gpuverify.history.names import is_service

DEFAULT_STORE = Path("~/.local/share/gpuverify/history.db")
SHOWN_PROBLEMS = 5  # bad lines named per imported file; the rest counted


def store_path(option: str | None) -> StoreName:
    """The store named by ``--store``, else ``$GPUVERIFY_HISTORY``, else the default (its folder made): a
    SQLite file, or a ``postgresql://`` URL."""
    if option:
        return locate(option)
    if os.environ.get(ENV):
        return locate(os.environ[ENV])
    path = DEFAULT_STORE.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _opened(command: str, path: StoreName, reading: bool) -> Connection | None:
    """The store at ``path``, open; None (said on stderr, naming the file and the fix) when it cannot be."""
    try:
        return open_store(path, reading=reading)
    except StoreError as exc:
        _fail(command, str(exc))
        return None


def _fail(command: str, message: str) -> int:
    print(f"gpuverify {command}: {message}", file=sys.stderr)
    return 2


def _one_line(command: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """A store fault met anywhere in the command (StoreError, raised by db.guard) as one line, exit 2."""

    def wrap(func: Callable[..., int]) -> Callable[..., int]:
        @wraps(func)
        def run(*args, **kwargs) -> int:
            try:
                return func(*args, **kwargs)
            except StoreError as exc:
                return _fail(command, str(exc))

        return run

    return wrap


@_one_line("history add")
def run_add(store: str | None, paths: list[str], ref: str | None, allowed: str | None = None) -> int:
    from pytest_gpuverify.history.add import artifact_files

    files = artifact_files(Path(p) for p in paths)
    missing = [p for p in files if not p.exists()]
    if not files or missing:
        return _fail("history add", f"{(missing or [Path(paths[0])])[0]}: no artifact (bench_*.json) there")
    if allowed and not Path(allowed).is_file():
        return _fail(
            "history add", f"--allowed-signers {allowed}: no such file. Fix: ssh-keygen's allowed-signers file"
        )
    path = store_path(store)
    if is_service(path):  # posted to a team's ingest service, which checks and verifies each itself
        from pytest_gpuverify.history.client import ServiceError, post_files

        try:
            results = post_files(str(path), files, ref)
        except ServiceError as exc:
            return _fail("history add", str(exc))
    else:
        conn = _opened("history add", path, reading=False)
        if conn is None:
            return 2
        with closing(conn), guard(path):
            results = add_files(conn, files, ref, Path(allowed) if allowed else None)
    for result in results:
        print(result.line())
    counts = {o: sum(r.outcome == o for r in results) for o in (ADDED, KNOWN, REFUSED)}
    print(f"{shown(path)}: {counts[ADDED]} added, {counts[KNOWN]} already stored, {counts[REFUSED]} refused")
    return 1 if counts[REFUSED] else 0


def run_serve(store: str | None, allowed_signers: str, tokens: str, host: str, port: int, allow_unsigned: bool) -> int:
    try:
        from pytest_gpuverify.history.service import Settings, SettingsError, read_token_roles, serve
    except ImportError as exc:  # starlette and uvicorn are the team extra's, not a core dependency
        return _fail("history serve", f"{exc}. Fix: pip install 'pytest-gpuverify[team]'")
    path = store_path(store)
    if is_service(path):
        return _fail("history serve", f"--store {path}: the service's own store is a file or a postgresql:// URL")
    try:
        known, read_only = read_token_roles(Path(tokens))
    except SettingsError as exc:
        return _fail("history serve", str(exc))
    return serve(Settings(path, Path(allowed_signers), known, read_only, allow_unsigned), host, port)


@_one_line("history show")
def run_show(
    store: str | None, target: str, ref: str | None, repo: str | None = None, newest: int | None = None
) -> int:
    """``newest``: the commits shown per row (default show.NEWEST); 0: every commit (``--all``)."""
    from pytest_gpuverify.history.reader import open_reader
    from pytest_gpuverify.history.series import commit_order, target_histories
    from pytest_gpuverify.history.show import NEWEST
    from pytest_gpuverify.history.show import render as show
    from pytest_gpuverify.history.steps import MOST_POINTS

    newest = NEWEST if newest is None else newest
    # the rows of the commits a fit looks at (or that are shown, when more); the older ones stay unread
    read = None if not newest else max(newest, MOST_POINTS)
    path = store_path(store)
    with closing(open_reader(path)) as reader:
        # of every ref: the commit graph picks those on ref's history
        found = reader.runs(target=target, watch=False, newest_commits=read)
        known = reader.targets() if not found else []
    kept, order = commit_order(found, ref, Path(repo) if repo else None)
    if not kept:
        on = f" on {ref}" if ref else ""
        why = "".join(f"; {note}" for note in order.notes)
        return _fail(
            "history show",
            f"{shown(path)} holds no run of {target}{on}{why}. It holds: {', '.join(known) or 'its other runs'}",
        )
    histories = target_histories(kept, order=order)
    others = len(kept) - sum(h.runs for h in histories)
    partial = read is not None and any(len(r.points) >= read for h in histories for r in h.rows)
    print(show(histories, newest or None, partial) if histories else f"{target}: no PASS run")
    if others:
        print(f"({others} run(s) not PASS or of a dirty checkout: no result of their commit, not shown)")
    for note in order.notes:
        print(f"({note})")
    return 0


@_one_line("history export")
def run_export(store: str | None, out: str | None, target: str | None) -> int:
    from pytest_gpuverify.history.exchange import export_lines

    path = store_path(store)
    conn = _opened("history export", path, reading=True)
    if conn is None:
        return 2
    with closing(conn), guard(path, writing=False):
        if out is None:
            count = export_lines(conn, sys.stdout, target)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                count = export_lines(conn, fh, target)
    print(f"{shown(path)}: {count} run(s) exported" + (f" to {out}" if out else ""), file=sys.stderr)
    return 0


@_one_line("history import")
def run_import(
    store: str | None, files: list[str], folders: list[str] | None = None, allowed: str | None = None
) -> int:
    from pytest_gpuverify.history.exchange import import_lines

    if allowed and not Path(allowed).is_file():
        return _fail(
            "history import", f"--allowed-signers {allowed}: no such file. Fix: ssh-keygen's allowed-signers file"
        )
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        return _fail("history import", f"{missing[0]}: no such file. Fix: name a file gpuverify history export wrote")
    path = store_path(store)
    conn = _opened("history import", path, reading=False)
    if conn is None:
        return 2
    bad = 0
    with closing(conn), guard(path):
        for name in files:
            added, known, problems = import_lines(
                conn, Path(name), [Path(f) for f in folders or []], Path(allowed) if allowed else None
            )
            for problem in problems[:SHOWN_PROBLEMS]:
                print(problem, file=sys.stderr)
            if len(problems) > SHOWN_PROBLEMS:
                print(f"{name}: {len(problems) - SHOWN_PROBLEMS} more line(s) skipped", file=sys.stderr)
            bad += len(problems)
            print(f"{name}: {added} added, {known} already stored, {len(problems)} line(s) skipped")
    return 1 if bad else 0


@_one_line("compare")
def run_history_compare(
    store: str | None,
    head: str,
    ref: str | None,
    last: int,
    rule: Rule = DEFAULT_RULE,
    fmt: str = "table",
    may_differ: frozenset[str] = frozenset(),
    fail_on_inconclusive: bool = False,
    baseline: str = "last-good",
    repo: str | None = None,
) -> int:
    from pytest_gpuverify.history.compare import against_history
    from pytest_gpuverify.history.reader import open_reader

    path = store_path(store)
    try:
        with closing(open_reader(path)) as reader:
            result = against_history(
                reader,
                shown(path),
                checked(head),
                head,
                ref,
                last,
                rule,
                may_differ,
                baseline,
                Path(repo) if repo else None,
            )
    except Refused as exc:
        return _fail("compare", f"refused: {exc}")
    if not result.pairs:
        return _fail("compare", f"no perf rows in {head}")
    print(
        render.as_json(result)
        if fmt == "json"
        else render.markdown(result)
        if fmt == "markdown"
        else render.table(result)
    )
    return exit_code(result.pairs, fail_on_inconclusive)


@_one_line("history clear-health")
def run_clear_health(store: str | None, uuid: str, by: str | None) -> int:
    """Clear a GPU's health record: it is judged on its runs after now only (the clear, by whom and when, kept)."""
    from pytest_gpuverify.history.health import clear

    path = store_path(store)
    if is_service(path):
        return _fail("history clear-health", f"{path}: an ingest service. Fix: name its database with --store")
    conn = _opened("history clear-health", path, reading=False)
    if conn is None:
        return 2
    with closing(conn), guard(path):
        who, runs = clear(conn, uuid, by)
    print(f"{uuid}: cleared by {who} ({runs} run(s) stored before; judged on later runs only)")
    if not runs:
        print(
            f"gpuverify history clear-health: {uuid}: no run of this GPU is stored. Fix: check the UUID (doctor lists them)",
            file=sys.stderr,
        )
        return 1
    return 0
