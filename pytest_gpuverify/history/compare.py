"""``gpuverify compare --history STORE HEAD.json``: the head against the store's PASS runs of like work
(the same facts as compare/identity.py reads them, the same target) at a baseline of commits that are
all ancestors of the head's commit, read from the commit graph (graph.py):

- ``last-good`` (the default): the newest ``last`` commits with such runs on ``--ref``'s first-parent
  history (the head's own first-parent history without a ref) that are ancestors of the head; never
  the head's own commit, a descendant of it, nor a commit of another history;
- ``release`` (``release:GLOB``): the newest tag reachable from the head's first parent (matching GLOB).

The base side is every run of those commits, pooled; then each row is called by compare's own rule
(compare/core.py), the clocks held as compare holds them (compare/clocks.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.compare.clocks import clock_problem
from pytest_gpuverify.compare.command import Refused, not_passing, own_watch
from pytest_gpuverify.compare.core import DEFAULT_RULE, Comparison, Rule, call_all, own_rows, pairs_of
from pytest_gpuverify.compare.identity import (
    CHANGE_NOTE_END,
    CHANGE_NOTE_START,
    Difference,
    change_notes,
    fact_differences,
    identity,
)
from pytest_gpuverify.history.graph import Checkout, GraphError, checkout_knowing
from pytest_gpuverify.history.reader import Reader
from pytest_gpuverify.history.records import StoredRun, commit_of, firmware_of
from pytest_gpuverify.history.series import counts
from pytest_gpuverify.records.artifact import Artifact, sha256_file

DEFAULT_LAST = 5
LAST_GOOD, RELEASE = "last-good", "release"


def baseline_problem(value: str) -> str | None:
    """One line when ``--baseline`` is not one this command knows."""
    kind, _, pattern = value.partition(":")
    if value == LAST_GOOD or (kind == RELEASE and (pattern or ":" not in value)):
        return None
    return (
        f"--baseline {value}: not a baseline. Fix: last-good (the newest ancestors of the head with PASS runs), "
        "release (the newest release tag below the head) or release:GLOB (e.g. release:'v*')"
    )


@dataclass
class Base:
    runs: list[StoredRun]
    allowed: list[Difference]
    header: str  # the first note: which commits the base is, and why those


def _differences(run: StoredRun, head: Artifact) -> list[Difference]:
    return fact_differences(run.facts, identity(head), (run.image_digest, head.image_digest))


def _like_runs(
    reader: Reader, head: Artifact, head_sha256: str, may_differ: frozenset[str]
) -> tuple[dict[str, list[StoredRun]], dict[str, str]]:
    """The store's PASS runs of the head's target whose facts differ from the head's in none but
    ``may_differ``, per commit; and per commit left out for its driver alone, the driver it ran on."""
    assert head.target is not None
    by_commit: dict[str, list[StoredRun]] = {}
    other_driver: dict[str, str] = {}
    for run in reader.runs(target=head.target.name, verdict="PASS", newest_first=True):
        if run.artifact_sha256 == head_sha256 or not counts(run) or not run.sha:
            continue  # the head itself, already stored; a dirty checkout's run; a run of no known commit
        refused = [d for d in _differences(run, head) if d.field not in may_differ]
        if refused:
            if [d.field for d in refused] == ["driver"] and refused[0].base:
                other_driver.setdefault(run.sha, refused[0].base)
            continue
        by_commit.setdefault(run.sha, []).append(run)
    return by_commit, other_driver


def _ancestors_newest_first(graph: Checkout, head: str, ref: str | None) -> tuple[list[str], str]:
    """The commits of ``ref``'s first-parent history (the head's own without a ref) that are ancestors of
    ``head``, newest first, the head's own commit left out; and how to name that history."""
    line = graph.line(ref or head)
    below = graph.not_below(line, head) if ref else set()
    return [s for s in reversed(line.shas) if s != head and s not in below], (
        f"on {ref}" if ref else "on its first-parent history"
    )


def base_runs(
    reader: Reader,
    store: str,
    head: Artifact,
    head_sha256: str,
    ref: str | None,
    last: int,
    may_differ: frozenset[str],
    baseline: str = LAST_GOOD,
    repo: Path | None = None,
) -> Base:
    """The base: every like run of the baseline's commits, all ancestors of the head's; Refused (one line,
    with the fix) where there is none or the graph cannot be read."""
    if head.target is None:
        raise Refused("the head names no target: history keeps runs by target")
    sha, _ = commit_of(head)
    if not sha:
        raise Refused(
            "the head names no commit: its base is taken from its commit's ancestors. Fix: compare "
            "an artifact of a run in a git checkout"
        )
    folders = [repo] if repo else [Path.cwd(), *(Path(r.path) for r in head.repos)]  # an A/B's: either side's
    by_commit, other_driver = _like_runs(reader, head, head_sha256, may_differ)
    name, short, tag = head.target.name, sha[:12], ""
    try:
        graph = checkout_knowing(sha, folders)
        if baseline.partition(":")[0] == RELEASE:
            tag, tagged = graph.release_below(sha, baseline.partition(":")[2] or None)
            candidates, where, last = [tagged], f"at release {tag} ({tagged[:12]}, below the head {short})", 1
        else:
            candidates, where = _ancestors_newest_first(graph, sha, ref)
            where += f" below the head {short}"
    except GraphError as exc:
        raise Refused(str(exc)) from None
    picked = [c for c in candidates if c in by_commit][:last]
    if not picked:
        older = next((other_driver[c] for c in candidates if c in other_driver), None)
        head_driver = identity(head).get("driver")
        if older and head_driver:
            raise Refused(
                f"{CHANGE_NOTE_START[0]}{older} to {head_driver} at this point: {store}'s runs of {name} {where} "
                f"ran on {older} only, so a step against them would be the driver's as much as a commit's. Fix: run "
                f"a base commit on {head_driver} (gpuverify history add its artifact), or --may-differ driver to "
                "compare across the update"
            )
        later = sum(len(v) for c, v in by_commit.items() if c not in candidates)
        elsewhere = (
            f"; its {later} other run(s) are of the head's commit, later commits or other histories" if later else ""
        )
        raise Refused(
            f"{store} holds no PASS run of {name} with the head's facts {where}{elsewhere}. Fix: add runs "
            "of an ancestor (gpuverify history add), name another --ref or --baseline, or --may-differ NAME "
            "where a fact may differ"
        )
    base = [r for c in picked for r in by_commit[c]]
    commits = ", ".join(f"{c[:12]} ({len(by_commit[c])} run(s))" for c in picked)
    if baseline == LAST_GOOD:
        header = (
            f"base: the last {len(picked)} commit(s) with PASS runs {where} (each an ancestor of it), "
            f"{len(base)} run(s) in {store}: {commits}"
        )
    else:
        header = f"base: release {tag}, commit {commits}, an ancestor of the head {short}, in {store}"
    allowed: list[Difference] = []
    for run in base:
        allowed += [d for d in _differences(run, head) if d not in allowed]
    return Base(base, allowed, header)


def _firmware_notes(base: list[StoredRun], head: Artifact) -> list[str]:
    """A note where the head's GPU firmware differs from the base runs' (where both were read)."""
    now = firmware_of(head)
    before = sorted({f for r in base if (f := r.facts.get("firmware")) and f != now})
    if not now or not before:
        return []
    return [f"{CHANGE_NOTE_START[1]}{', '.join(before)} to {now}{CHANGE_NOTE_END}"]


def against_history(
    reader: Reader,
    store: str,
    head: Artifact,
    head_path: str,
    ref: str | None,
    last: int = DEFAULT_LAST,
    rule: Rule = DEFAULT_RULE,
    may_differ: frozenset[str] = frozenset(),
    baseline: str = LAST_GOOD,
    repo: Path | None = None,
) -> Comparison:
    """Every check before a call, then the calls; Refused where no compare may be made."""
    bad = not_passing(f"the head ({head_path})", head)
    if bad:
        raise Refused(bad)
    base = base_runs(reader, store, head, sha256_file(Path(head_path)), ref, last, may_differ, baseline, repo)
    directions = head.target.directions if head.target else {}
    pairs = pairs_of({"base": [], "head": own_rows(head)}, directions)
    pooled: dict[tuple, list[float]] = {}
    for run in base.runs:
        for row in run.rows:
            pooled.setdefault(row.key, []).extend(row.values)
    for pair in pairs:
        pair.base = list(pooled.get((pair.table, pair.shape, pair.name, pair.stat, pair.metric), []))
    clocks, notes = clock_problem([w for r in base.runs for w in r.watch], own_watch(head, None))
    notes.insert(0, base.header)
    notes[1:1] = change_notes(base.allowed) + _firmware_notes(base.runs, head)
    newest_base = next((r.sha for r in base.runs if r.sha), None)  # runs come newest commit first
    return Comparison(
        call_all(pairs, rule, clocks),
        rule,
        base.allowed,
        notes,
        target=head.target.name if head.target else None,
        artifacts={"base": store, "head": head_path},
        commits={"base": newest_base, "head": commit_of(head)[0]},
    )
