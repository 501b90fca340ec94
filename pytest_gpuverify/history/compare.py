"""``gpuverify compare --history STORE HEAD.json``: the head against the last K PASS runs in the store of
like work (the same facts as compare/identity.py reads them, the same target) on one ref. The base side
is those runs: every run of each (a repeated target's runs, each one value), pooled; then each row is
called by compare's own rule (compare/core.py), the clocks held as compare holds them (compare/clocks.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Optional

from pytest_gpuverify.compare.clocks import clock_problem
from pytest_gpuverify.compare.command import Refused, not_passing, own_watch
from pytest_gpuverify.compare.core import Comparison
from pytest_gpuverify.compare.core import DEFAULT_RULE, Rule, call_all, own_rows, pairs_of
from pytest_gpuverify.compare.identity import Difference, fact_differences, identity
from pytest_gpuverify.records.artifact import Artifact, sha256_file
from pytest_gpuverify.history.records import StoredRun
from pytest_gpuverify.history.series import counts
from pytest_gpuverify.history.store import runs

DEFAULT_LAST = 5


def base_runs(conn: sqlite3.Connection, head: Artifact, head_sha256: str, ref: Optional[str], last: int,
              may_differ: frozenset[str]) -> tuple[list[StoredRun], list[Difference]]:
    """The newest ``last`` PASS runs of the head's target on ``ref`` whose facts differ from the head's
    in none but ``may_differ``; and the allowed differences they have."""
    if head.target is None:
        raise Refused("the head names no target: history keeps runs by target")
    mine = identity(head)
    picked, allowed = [], []
    for run in runs(conn, target=head.target.name, ref=ref, verdict="PASS", newest_first=True):
        if run.artifact_sha256 == head_sha256 or not counts(run):
            continue  # the head itself, already stored; a dirty checkout's run
        found = fact_differences(run.facts, mine, (run.image_digest, head.image_digest))
        if any(d.field not in may_differ for d in found):
            continue
        picked.append(run)
        allowed += [d for d in found if d not in allowed]
        if len(picked) == last:
            break
    return picked, allowed


def against_history(conn: sqlite3.Connection, store: str, head: Artifact, head_path: str, ref: Optional[str],
                    last: int = DEFAULT_LAST, rule: Rule = DEFAULT_RULE,
                    may_differ: frozenset[str] = frozenset()) -> Comparison:
    """Every check before a call, then the calls; Refused where no compare may be made."""
    bad = not_passing(f"the head ({head_path})", head)
    if bad:
        raise Refused(bad)
    picked, allowed = base_runs(conn, head, sha256_file(Path(head_path)), ref, last, may_differ)
    on = f" on {ref}" if ref else ""
    if not picked:
        assert head.target is not None
        raise Refused(f"{store} holds no PASS run of {head.target.name}{on} with the head's facts "
                      "(gpuverify history show names what it holds; --may-differ NAME allows a fact to differ)")
    directions = head.target.directions if head.target else {}
    pairs = pairs_of({"base": [], "head": own_rows(head)}, directions)
    pooled: dict[tuple, list[float]] = {}
    for run in picked:
        for row in run.rows:
            pooled.setdefault(row.key, []).extend(row.values)
    for pair in pairs:
        pair.base = list(pooled.get((pair.table, pair.shape, pair.name, pair.stat, pair.metric), []))
    clocks, notes = clock_problem([w for r in picked for w in r.watch], own_watch(head, None))
    commits = ", ".join(f"{(r.sha or '?')[:12]} ({r.ts[:19]})" for r in picked)
    notes.insert(0, f"base: the last {len(picked)} PASS run(s){on} in {store}: {commits}")
    return Comparison(call_all(pairs, rule, clocks), rule, allowed, notes)
