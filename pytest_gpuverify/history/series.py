"""A target's history as trends: its PASS runs in time order, grouped into like work (the facts of
compare/identity.py), per perf row one point per commit (the median of every run at that commit) and
the steps found in them (steps.py). Runs that are not PASS, and runs of a dirty checkout, are no result
of their commit: they are counted, not plotted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.core import DEFAULT_RULE, REGRESSED, Rule
from pytest_gpuverify.compare.identity import fact_differences
from pytest_gpuverify.history.records import RowKey, StoredRun
from pytest_gpuverify.history.steps import Step, find_steps


@dataclass
class Point:
    sha: Optional[str]
    ts: str  # the first run's
    values: list[float]  # every run's value at this commit
    artifacts: int = 1

    @property
    def median(self) -> float:
        return stats.median(self.values)

    def short(self) -> str:
        return (self.sha or "unknown")[:12]


@dataclass
class RowHistory:
    key: RowKey
    direction: Optional[str]
    points: list[Point]
    steps: list[Step] = field(default_factory=list)

    def label(self) -> str:
        table, shape, name, stat, metric = self.key
        what = metric if stat in (None, "median") or metric != "us" else f"{stat} us"
        return " ".join(p for p in (table, shape, name, what) if p)

    def step_range(self, step: Step) -> str:
        """The commits a step lies between: the last before it and the first after it."""
        return f"{self.points[step.index - 1].short()}..{self.points[step.index].short()}"

    def regressions(self) -> list[Step]:
        return [s for s in self.steps if s.call == REGRESSED]


@dataclass
class TargetHistory:
    target: str
    facts: dict[str, Optional[str]]
    rows: list[RowHistory]
    runs: int  # PASS runs in this group
    refs: list[str]


def like_groups(runs: list[StoredRun]) -> list[list[StoredRun]]:
    """Runs split into like work: a run joins the first group whose first run's facts it shares."""
    groups: list[list[StoredRun]] = []
    for run in runs:
        home = next((g for g in groups if g[0].label() == run.label() and not fact_differences(
            g[0].facts, run.facts, (g[0].image_digest, run.image_digest))), None)
        if home is None:
            groups.append([run])
        else:
            home.append(run)
    return groups


def row_histories(runs: list[StoredRun], rule: Rule = DEFAULT_RULE) -> list[RowHistory]:
    """Per row, one point per commit (runs in time order; consecutive runs of one commit join) and its steps."""
    found: dict[RowKey, RowHistory] = {}
    for run in sorted(runs, key=lambda r: r.ts):
        for row in run.rows:
            history = found.setdefault(row.key, RowHistory(row.key, row.direction, []))
            last = history.points[-1] if history.points else None
            if last is not None and last.sha is not None and last.sha == run.sha:
                last.values += row.values
                last.artifacts += 1
            else:
                history.points.append(Point(run.sha, run.ts, list(row.values)))
    for history in found.values():
        history.steps = find_steps([p.median for p in history.points], history.direction, rule)
    return list(found.values())


def counts(run: StoredRun) -> bool:
    """A result of its commit: PASS, and run on the commit itself, known clean (a dirty checkout ran other
    code; a run whose state was not recorded, as an A/B head was before, may have: never a base)."""
    return run.verdict == "PASS" and run.dirty is False


def target_histories(runs: list[StoredRun], rule: Rule = DEFAULT_RULE) -> list[TargetHistory]:
    passing = [r for r in runs if counts(r)]
    return [TargetHistory(group[0].label(), group[0].facts, row_histories(group, rule), len(group),
                          sorted({r.ref for r in group if r.ref}))
            for group in like_groups(sorted(passing, key=lambda r: r.ts))]
