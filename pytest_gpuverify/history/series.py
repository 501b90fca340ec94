"""A target's history as trends: its PASS runs grouped into like work (the facts of compare/identity.py),
per perf row one point per commit (the median of every run at that commit, whenever they ran) and the
steps found in them (steps.py). Runs that are not PASS, and runs of a dirty checkout, are no result of
their commit: they are counted, not plotted.

The points are in the order of the commit graph: a ref's first-parent history in a git checkout
(graph.py), so a re-run of an old commit joins that commit's point and a step's range ``BEFORE..AFTER``
is always an ancestor and its descendant. Runs of commits off that history are counted, not plotted.
Where no checkout has the runs' commits (a store read on another machine) the points are in the order
their commits first ran, and a step names its two commits without a range.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.core import DEFAULT_RULE, REGRESSED, Rule
from pytest_gpuverify.compare.identity import fact_differences
from pytest_gpuverify.history.graph import Checkout, GraphError, Line, checkout
from pytest_gpuverify.history.records import RowKey, StoredRun
from pytest_gpuverify.history.steps import Step, called_at_change, find_steps

# The machine's facts that change on one machine over time (an update, not another machine): a target's series
# runs on through them, split at each change; a step there names the change, never a commit.
CHANGES = {"driver": "the driver", "firmware": "the GPU firmware (VBIOS)"}


@dataclass
class Point:
    sha: str | None
    ts: str  # the first run's
    values: list[float]  # every run's value at this commit
    artifacts: int = 1
    machine: tuple[str | None, ...] = ()  # the runs' CHANGES facts (driver, firmware): a point is of one machine

    @property
    def median(self) -> float:
        return stats.median(self.values)

    def short(self) -> str:
        return (self.sha or "unknown")[:12]


@dataclass
class RowHistory:
    key: RowKey
    direction: str | None
    points: list[Point]
    steps: list[Step] = field(default_factory=list)
    no_range: dict[int, str] = field(default_factory=dict)  # a step's index -> why it has no commit range

    def label(self) -> str:
        table, shape, name, stat, metric = self.key
        what = metric if stat in (None, "median") or metric != "us" else f"{stat} us"
        return " ".join(p for p in (table, shape, name, what) if p)

    def step_range(self, step: Step) -> str:
        """The commits a step lies between, ``BEFORE..AFTER`` (the last before it and the first after it);
        where BEFORE is not known to be an ancestor of AFTER, the two commits and why there is no range."""
        before, after = self.points[step.index - 1].short(), self.points[step.index].short()
        if step.cause:
            return f"{step.cause} (after {before}, at {after}: not a commit's doing)"
        why = self.no_range.get(step.index)
        return f"after {before}, at {after} (no commit range: {why})" if why else f"{before}..{after}"

    def regressions(self) -> list[Step]:
        return [s for s in self.steps if s.call == REGRESSED]


@dataclass
class TargetHistory:
    target: str
    facts: dict[str, str | None]
    rows: list[RowHistory]
    runs: int  # PASS runs in this group
    refs: list[str]
    runner: str | None = None  # the runner label its runs were sent by (the ingest service's; None: added on a host)


@dataclass(frozen=True)
class Order:
    """The order a target's commits are drawn in: ``line`` (a ref's first-parent history), else the
    time each commit first ran, with ``why`` the graph was not read; ``notes`` are said once."""

    line: Line | None = None
    checkout: Checkout | None = None  # time order: a checkout that may still tell ancestors apart
    why: str = ""
    notes: tuple[str, ...] = ()

    def sort_key(self, runs: list[StoredRun]):
        """A run's sort key: its commit's place (on the line, else its first run's time), then its time."""
        if self.line is not None:
            line = self.line
            return lambda r: (line.place(r.sha) if line.place(r.sha) is not None else -1, r.ts)
        first: dict[str, str] = {}
        for run in runs:
            if run.sha and (run.sha not in first or run.ts < first[run.sha]):
                first[run.sha] = run.ts
        return lambda r: (first.get(r.sha or "", r.ts), r.sha or "", r.ts)

    def why_no_range(self, before: str | None, after: str | None) -> str | None:
        """None when ``before`` is an ancestor of ``after`` (always so on the line); else why no range."""
        if self.line is not None:
            return None
        if self.checkout is not None and before and after:
            ancestor = self.checkout.is_ancestor(before, after)
            if ancestor:
                return None
            if ancestor is False:
                return f"{before[:12]} is not an ancestor of {after[:12]}"
        return "ordered by run time, not checked against the commit graph"


TIME_ORDER = Order(why="no commit graph read")


def commit_order(runs: list[StoredRun], ref: str | None, repo: Path | None = None) -> tuple[list[StoredRun], Order]:
    """The runs to draw and their order: those on ``ref``'s first-parent history (HEAD's without a ref) in
    the checkout ``repo`` (default: the current folder's, else one the newest run's artifact names) that
    has the runs' commits; where none has them, the runs of ``ref`` (as stored) in run-time order."""
    newest = max((r for r in runs if r.sha), key=lambda r: r.ts, default=None)
    if newest is None or newest.sha is None:
        return _by_time(runs, ref, "no run names its commit", None)
    tried: list[str] = []
    knowing: Checkout | None = None  # has the commits, but not the ref
    for folder in [repo] if repo else [Path.cwd(), *_recorded_repo(newest)]:
        try:
            found = checkout(folder)
        except GraphError as exc:
            tried.append(str(exc).split(". Fix:")[0])
            continue
        try:
            line = found.line(ref or "HEAD")
        except GraphError as exc:
            tried.append(str(exc).split(". Fix:")[0])
            knowing = knowing or (found if found.knows(newest.sha) else None)
            continue
        if any(line.place(r.sha) is not None for r in runs) or found.knows(newest.sha):
            return _on_line(runs, line)
        tried.append(f"{found.top} has none of the runs' commits")
    return _by_time(runs, ref, "; ".join(tried), knowing)


def _on_line(runs: list[StoredRun], line: Line) -> tuple[list[StoredRun], Order]:
    on = [r for r in runs if line.place(r.sha) is not None]
    off = [r for r in runs if line.place(r.sha) is None]
    notes: tuple[str, ...] = ()
    if off:
        commits = len({r.sha for r in off})
        notes = (
            f"{len(off)} run(s) of {commits} commit(s) not on {line.ref}'s first-parent history in {line.repo}: "
            "not plotted",
        )
    return on, Order(line=line, notes=notes)


def _by_time(runs: list[StoredRun], ref: str | None, why: str, found: Checkout | None) -> tuple[list[StoredRun], Order]:
    note = (
        f"commits in the order they first ran, not by the commit graph ({why}); step ranges are not graph-checked. "
        "Fix: run in the code's git checkout, or name it with --repo PATH"
    )
    return [r for r in runs if ref is None or r.ref == ref], Order(checkout=found, why=why, notes=(note,))


def _recorded_repo(run: StoredRun) -> list[Path]:
    """The checkouts the run's artifact names, where the artifact is still there."""
    from pytest_gpuverify.records.artifact import read_artifact

    try:
        art = read_artifact(Path(run.artifact_path))
    except (OSError, ValueError):
        return []
    return [Path(r.path) for r in art.repos if Path(r.path).is_dir()]


def _alike(one: StoredRun, other: StoredRun) -> bool:
    """Like work on the same kind of machine (model, arch, partition mode, power cap: compare's facts) and the same
    runner label (the ingest service's runner; none for runs added on a host): the driver and firmware may differ."""
    differ = fact_differences(one.facts, other.facts, (one.image_digest, other.image_digest))
    return one.label() == other.label() and one.runner == other.runner and all(d.field in CHANGES for d in differ)


def machine_of(run: StoredRun) -> tuple[str | None, ...]:
    return tuple(run.facts.get(name) for name in CHANGES)


def change_between(before: tuple[str | None, ...], after: tuple[str | None, ...]) -> str | None:
    """ "the driver changed from X to Y at this point" (each fact known on both sides that differs); None if none."""
    said = [
        f"{what} changed from {b} to {a}"
        for what, b, a in zip(CHANGES.values(), before, after)
        if b is not None and a is not None and b != a
    ]
    return " and ".join(said) + " at this point" if said else None


def like_groups(runs: list[StoredRun]) -> list[list[StoredRun]]:
    """Runs split into like work: a run joins the first group whose first run's facts it shares."""
    groups: list[list[StoredRun]] = []
    for run in runs:
        home = next((g for g in groups if _alike(g[0], run)), None)
        if home is None:
            groups.append([run])
        else:
            home.append(run)
    return groups


def row_histories(runs: list[StoredRun], rule: Rule = DEFAULT_RULE, order: Order = TIME_ORDER) -> list[RowHistory]:
    """Per row, one point per commit and machine (every run of a commit on one driver and firmware joins its point,
    in ``order``) and its steps: found within each stretch of one machine; where the machine changed, the
    points on its two sides are called by the rule and a step there names the change (:func:`change_between`)."""
    found: dict[RowKey, RowHistory] = {}
    for run in sorted(runs, key=order.sort_key(runs)):
        machine = machine_of(run)
        for row in run.rows:
            history = found.setdefault(row.key, RowHistory(row.key, row.direction, []))
            last = history.points[-1] if history.points else None
            if last is not None and last.sha is not None and last.sha == run.sha and last.machine == machine:
                last.values += row.values
                last.artifacts += 1
            else:
                history.points.append(Point(run.sha, run.ts, list(row.values), machine=machine))
    for history in found.values():
        history.steps = _steps_of(history, rule)
        for step in history.steps:
            why = order.why_no_range(history.points[step.index - 1].sha, history.points[step.index].sha)
            if why and not step.cause:
                history.no_range[step.index] = why
    return list(found.values())


def _steps_of(history: RowHistory, rule: Rule) -> list[Step]:
    points, medians = history.points, [p.median for p in history.points]
    cuts = [i for i in range(1, len(points)) if change_between(points[i - 1].machine, points[i].machine)]
    bounds = [0, *cuts, len(points)]
    steps: list[Step] = []
    for k in range(len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        steps += [replace(s, index=s.index + lo) for s in find_steps(medians[lo:hi], history.direction, rule)]
        if hi < len(points):  # the change at hi: the stretch before it against the one after it
            before, after = medians[lo:hi], medians[hi : bounds[k + 2]]
            cause = change_between(points[hi - 1].machine, points[hi].machine) or ""
            step = called_at_change(before, after, history.direction, rule, cause)
            if step is not None:
                steps.append(replace(step, index=hi))
    return sorted(steps, key=lambda s: s.index)


def counts(run: StoredRun) -> bool:
    """A result of its commit: PASS, and run on the commit itself, known clean (a dirty checkout ran other
    code; a run whose state was not recorded, as an A/B head was before, may have: never a base)."""
    return run.verdict == "PASS" and run.dirty is False


def target_histories(
    runs: list[StoredRun], rule: Rule = DEFAULT_RULE, order: Order = TIME_ORDER
) -> list[TargetHistory]:
    """Per group of like work, its rows' histories in ``order`` (commit_order's, else run time)."""
    passing = [r for r in runs if counts(r)]
    return [
        TargetHistory(
            group[0].label(),
            group[0].facts,
            row_histories(group, rule, order),
            len(group),
            sorted({r.ref for r in group if r.ref}),
            group[0].runner,
        )
        for group in like_groups(sorted(passing, key=lambda r: r.ts))
    ]
