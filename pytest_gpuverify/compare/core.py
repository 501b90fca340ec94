"""Pair the perf rows of base and head (one A/B artifact whose rows carry ``side``, or two artifacts)
and call each pair. **The process is the unit**: a side's n is its number of processes. Rows that carry
a ``run`` number are one process per run number; the rows of one artifact without a run number (a
harness's own rounds printed in one process) are one process. A process's value for a row is the median
of what it printed for the row.

The rule (:class:`Rule`), in order, for each row key (table, shape, name, stat, metric):

1. a figure whose direction is unknown is not compared (parsers/figures.py);
2. a side throttled, or SM clocks apart (clocks.py): INCONCLUSIVE;
3. fewer than ``least_runs`` processes on a side: INCONCLUSIVE (one run a side never makes a call);
4. a side whose runs spread beyond ``noisy_cv`` or fall into two clusters: INCONCLUSIVE, noisy;
5. then Welch's t on the logs of the run values (the change is a ratio; the log makes it symmetric)
   gives the ratio (of the sides' geometric means), its ``confidence`` interval exp(diff -+ t x se) and
   a two-sided p; the p values of all the rows of one compare are adjusted by Benjamini-Hochberg into
   q values (:func:`call_all`), so a compare of hundreds of rows keeps its share of false calls at
   ``fdr``;
6. q < ``fdr`` and the ratio beyond ``factor``: IMPROVED or REGRESSED;
7. the whole interval inside the equivalence margin [1/factor, factor]: SAME;
8. otherwise INCONCLUSIVE, ``cannot tell``: the interval and the margin, and the runs per side that
   would decide if the ratio held.

:func:`call` calls one pair on its own (its q is its p: a family of one), as history's step search does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from math import ceil, exp, inf, log, sqrt
from statistics import fmean

from pytest_gpuverify.common import stats
from pytest_gpuverify.compare.identity import Difference
from pytest_gpuverify.config.vocabulary import HIGHER
from pytest_gpuverify.parsers.figures import direction_of, process_values, unit_of
from pytest_gpuverify.records.artifact import AbRecord, Artifact, PerfRow

BASE_SIDES, HEAD_SIDES = ("a", "base"), ("b", "head")
IMPROVED, REGRESSED, SAME, INCONCLUSIVE, NOT_COMPARED = "IMPROVED", "REGRESSED", "SAME", "INCONCLUSIVE", "NOT COMPARED"
MOST_RUNS = 1000  # runs per side beyond which "would decide" is not promised


@dataclass(frozen=True)
class Rule:
    factor: float = 1.05  # a call needs the ratio beyond it; SAME needs the interval inside [1/factor, factor]
    fdr: float = 0.05  # the false discovery rate kept over the rows of one compare (Benjamini-Hochberg q)
    confidence: float = 0.95  # of the ratio's interval
    noisy_cv: float = 0.10  # a side whose runs spread more is noisy (pyperf's "unstable")
    least_runs: int = 4  # processes per side before any call: fewer give no steady estimate of the spread
    spread: float = 0.0  # a call also needs the change beyond this many CVs of the runs (0: no such gate)

    @property
    def margin(self) -> tuple[float, float]:
        return 1 / self.factor, self.factor

    @property
    def level(self) -> str:
        """The confidence as a percentage: ``95%``, ``99.9%``."""
        return f"{round(self.confidence * 100, 6):g}%"


DEFAULT_RULE = Rule()


@dataclass
class Pair:
    table: str | None
    shape: str
    name: str
    stat: str | None
    metric: str
    direction: str | None  # "higher"/"lower": which way is better; None: unknown
    base: list[float] = field(default_factory=list)  # one value per process (run)
    head: list[float] = field(default_factory=list)
    base_mean: float | None = None
    head_mean: float | None = None
    base_cv: float | None = None
    head_cv: float | None = None
    ratio: float | None = None  # head / base, of the geometric means (the mean of the logs)
    call: str = INCONCLUSIVE
    why: str = ""
    runs_needed: int | None = None  # per side, for an INCONCLUSIVE row that more runs can decide
    ci_low: float | None = None  # the ratio's interval at the rule's confidence
    ci_high: float | None = None
    p: float | None = None  # Welch's t on the logs, two-sided
    q: float | None = None  # p adjusted over the compare's rows (Benjamini-Hochberg); None: not tested
    base_runs: list[int | None] = field(default_factory=list)  # the process of each value (run number)
    head_runs: list[int | None] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def side_of(value: str | None) -> str | None:
    low = (value or "").lower()
    return "base" if low in BASE_SIDES else "head" if low in HEAD_SIDES else None


def pairs_of(rows_by_side: dict[str, list[PerfRow]], directions: Mapping[str, str] = {}) -> list[Pair]:
    """One pair per row key; each side's values one per process (``process_values``: the rows of one run
    number give their median, and the rows without a run number, a harness's own rounds printed in one
    process, are one process, their median one value)."""
    found: dict[tuple, Pair] = {}
    for side, rows in rows_by_side.items():
        for key, processes in process_values(rows).items():
            if key not in found:
                table, shape, name, stat, metric = key
                found[key] = Pair(table, shape, name, stat, metric, direction_of(metric, name, directions))
            values, runs = [stats.median(v) for v in processes.values()], list(processes)
            if side == "base":
                found[key].base, found[key].base_runs = values, runs
            else:
                found[key].head, found[key].head_runs = values, runs
    return list(found.values())


def own_rows(art: Artifact) -> list[PerfRow]:
    """An artifact's rows as one side of a two-artifact compare: an A/B artifact (rows with a side)
    gives its head side (B) only, never its base rows pooled in."""
    if any(side_of(r.side) for r in art.perf):
        return [r for r in art.perf if side_of(r.side) == "head"]
    return list(art.perf)


def rows_by_side(base: Artifact, head: Artifact | None) -> dict[str, list[PerfRow]]:
    if head is not None:
        return {"base": own_rows(base), "head": own_rows(head)}
    out: dict[str, list[PerfRow]] = defaultdict(list)
    for row in base.perf:
        side = side_of(row.side)
        if side:
            out[side].append(row)
    return {"base": out["base"], "head": out["head"]}


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _g(value: float) -> str:
    """A p or q value: two significant digits."""
    return f"{value:.2g}"


def _inconclusive(pair: Pair, why: str, needed: int | None = None) -> Pair:
    pair.call, pair.runs_needed = INCONCLUSIVE, needed
    pair.why = why + (f"; {needed} runs per side would decide" if needed else "")
    return pair


def measure(pair: Pair, rule: Rule = DEFAULT_RULE) -> Pair:
    """The sides' means and CVs; from positive values, the ratio of the geometric means, and from 2 runs
    a side its interval at ``rule.confidence`` and Welch's two-sided p, both on the logs of the runs."""
    for side in ("base", "head"):
        values = getattr(pair, side)
        setattr(pair, f"{side}_mean", fmean(values) if values else None)
        setattr(pair, f"{side}_cv", stats.cv(values))
    if not pair.base or not pair.head or min(pair.base + pair.head) <= 0:
        return pair
    logs_b, logs_h = [log(v) for v in pair.base], [log(v) for v in pair.head]
    if len(logs_b) < 2 or len(logs_h) < 2:
        pair.ratio = exp(fmean(logs_h) - fmean(logs_b))
        return pair
    test = stats.welch(logs_b, logs_h)
    low, high = test.interval(rule.confidence)
    pair.ratio, pair.ci_low, pair.ci_high, pair.p = exp(test.diff), exp(low), exp(high), test.p
    return pair


def runs_to_decide(pair: Pair, rule: Rule, least: int) -> int | None:
    """The fewest runs per side (from ``least``) at which the interval, of the same centre and the runs'
    pooled spread of logs, would lie inside the margin (a ratio within the factor) or leave no doubt of
    the direction (a ratio beyond it: a call then needs the compare's q as well); None beyond MOST_RUNS
    or for a ratio on the margin's edge, which no number of runs decides."""
    if pair.ratio is None or len(pair.base) < 2 or len(pair.head) < 2 or min(pair.base + pair.head) <= 0:
        return None
    spread = (stats.variance([log(v) for v in pair.base]) + stats.variance([log(v) for v in pair.head])) / 2
    distance, edge = abs(log(pair.ratio)), log(rule.factor)
    if distance == edge:
        return None
    room = edge - distance if distance < edge else distance  # what half the interval must stay below

    def decides(n: int) -> bool:
        return stats.t_quantile(0.5 + rule.confidence / 2, 2 * n - 2) * sqrt(2 * spread / n) < room

    least = max(least, 2)
    if least > MOST_RUNS:
        return None
    # the normal quantile's count is a lower bound (t's is wider): start there, double to a bracket
    z = stats.t_quantile(0.5 + rule.confidence / 2, inf)
    lo = min(MOST_RUNS, max(least, ceil(2 * spread * (z / room) ** 2)))
    hi = lo
    while not decides(hi):
        if hi >= MOST_RUNS:
            return None
        lo, hi = hi + 1, min(MOST_RUNS, hi * 2)
    while lo < hi:  # the half width only shrinks with n
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decides(mid) else (mid + 1, hi)
    return lo


def call(pair: Pair, rule: Rule = DEFAULT_RULE, clocks: str | None = None) -> Pair:
    """The pair's call under ``rule``; ``clocks``: why the GPUs' clocks allow no call (clocks.py). The
    pair's ``q``, when :func:`call_all` set it, is its p adjusted over the compare's rows; a pair called
    on its own is a family of one (q = p)."""
    if pair.direction is None:
        pair.call = NOT_COMPARED
        pair.why = f'direction unknown: declare it, e.g. directions = {{ "{pair.metric}" = "higher" }}'
        return pair
    if not pair.base or not pair.head:
        return _inconclusive(pair, f"only one side printed it (base {len(pair.base)} runs, head {len(pair.head)})")
    if pair.base_mean is None:  # call_all measured it already
        measure(pair, rule)
    if pair.ratio is None:
        return _inconclusive(pair, "a run's value is zero or negative: a ratio needs positive values")
    if clocks:
        return _inconclusive(pair, clocks)
    runs = min(len(pair.base), len(pair.head))
    if runs < rule.least_runs:
        needed = max(rule.least_runs, runs_to_decide(pair, rule, rule.least_runs) or 0)
        return _inconclusive(
            pair,
            f"needs {needed} runs per side (base {len(pair.base)}, head {len(pair.head)}): "
            f"fewer give no steady measure of the runs' own spread",
        )
    assert pair.p is not None and pair.ci_low is not None and pair.ci_high is not None
    if pair.q is None:
        pair.q = pair.p
    more = runs_to_decide(pair, rule, max(rule.least_runs, runs + 1))
    noisy = _noisy(pair, rule)
    if noisy:
        return _inconclusive(pair, "noisy: " + noisy, more)
    gain = pair.ratio if pair.direction == HIGHER else 1 / pair.ratio  # > 1: head is better
    change = max(gain, 1 / gain) - 1
    low, high = rule.margin
    interval = f"the {rule.level} interval [{pair.ci_low:.3f}, {pair.ci_high:.3f}]"
    margin = f"the margin [{low:.3f}, {high:.3f}]"
    significant = pair.q < rule.fdr
    tested = f"q = {_g(pair.q)}"
    shown_p = f" (p = {_g(pair.p)})" if _g(pair.p) != _g(pair.q) else ""
    if significant and change > rule.factor - 1:
        cvs = [c for c in (pair.base_cv, pair.head_cv) if c is not None]
        pooled = sqrt(sum(c * c for c in cvs) / len(cvs)) if cvs else 0.0
        if rule.spread and change <= rule.spread * pooled:
            return _inconclusive(
                pair,
                f"{_pct(change)} apart: past the factor {rule.factor:g} but within the runs' own "
                f"spread ({rule.spread:g} x CV {_pct(pooled)})",
                more,
            )
        pair.call = IMPROVED if gain > 1 else REGRESSED
        pair.why = f"{_pct(change)} apart, past the factor {rule.factor:g}; {tested} < {rule.fdr:g}{shown_p}"
        return pair
    if low <= pair.ci_low and pair.ci_high <= high:
        pair.call, pair.why = SAME, f"{_pct(change)} apart; {interval} inside {margin}"
        return pair
    if significant:
        doubt = f"{_pct(change)} apart, a change ({tested}{shown_p}) within the factor {rule.factor:g}, but {interval} leaves {margin}"
    elif change > rule.factor - 1:
        doubt = (
            f"{_pct(change)} apart, past the factor {rule.factor:g} but not significant ({tested}{shown_p}, needs "
            f"< {rule.fdr:g}); {interval} leaves {margin}"
        )
    else:
        doubt = f"{_pct(change)} apart, but {interval} leaves {margin}"
    return _inconclusive(pair, "cannot tell: " + doubt, more)


def _noisy(pair: Pair, rule: Rule) -> str | None:
    for label, values, spread in (("base", pair.base, pair.base_cv), ("head", pair.head, pair.head_cv)):
        if spread is not None and spread > rule.noisy_cv:
            return f"the {label}'s runs spread CV {_pct(spread)} (bound {_pct(rule.noisy_cv)})"
        groups = stats.two_clusters(values)
        if groups:
            return (
                f"the {label}'s runs fall into two clusters ({len(groups[0])} near {stats.median(groups[0]):.4g}, "
                f"{len(groups[1])} near {stats.median(groups[1]):.4g})"
            )
    return None


def call_all(pairs: Sequence[Pair], rule: Rule = DEFAULT_RULE, clocks: str | None = None) -> list[Pair]:
    """Every pair's call, the rows of one compare as one family: each p tested (a known direction and
    ``least_runs`` a side) is adjusted by Benjamini-Hochberg over all of them into its q."""
    tested = [
        measure(p, rule) for p in pairs if p.direction is not None and min(len(p.base), len(p.head)) >= rule.least_runs
    ]
    tested = [p for p in tested if p.p is not None]
    for pair, q in zip(tested, stats.bh_adjust([p.p for p in tested if p.p is not None])):
        pair.q = q
    return [call(p, rule, clocks) for p in pairs]


def compare(
    base: Artifact, head: Artifact | None = None, rule: Rule = DEFAULT_RULE, clocks: str | None = None
) -> list[Pair]:
    directions = {
        **(base.target.directions if base.target else {}),
        **(head.target.directions if head is not None and head.target else {}),
    }
    return call_all(pairs_of(rows_by_side(base, head), directions), rule, clocks)


# -- the summary: the geometric mean of the gain ------------------------------------------------------


@dataclass
class Summary:
    """The geometric mean of the gain (head better: above 1) over one figure per row of a table, or of
    the whole compare (``table`` None), with the interval where every row was measured in the same runs."""

    table: str | None
    rows: int
    figures: list[str]  # the figures taken, e.g. ["us"]
    gain: float
    ci_low: float | None = None
    ci_high: float | None = None
    why_no_interval: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _summary_rows(pairs: Sequence[Pair]) -> list[Pair]:
    """One pair per (table, shape, name, stat) with both sides: its time figure, else its first with a direction."""
    chosen: dict[tuple, Pair] = {}
    for pair in pairs:
        if pair.direction is None or pair.ratio is None:
            continue
        key = (pair.table, pair.shape, pair.name, pair.stat)
        held = chosen.get(key)
        is_time = pair.direction != HIGHER and unit_of(pair.metric) == "us"
        if held is None or (is_time and unit_of(held.metric) != "us"):
            chosen[key] = pair
    return list(chosen.values())


def _signed_logs(pair: Pair, side: str) -> dict[int | None, float]:
    sign = 1.0 if pair.direction == HIGHER else -1.0
    return {run: sign * log(v) for run, v in zip(getattr(pair, f"{side}_runs"), getattr(pair, side))}


def summarise(table: str | None, pairs: list[Pair], rule: Rule) -> Summary:
    gains = [log(p.ratio if p.direction == HIGHER else 1 / p.ratio) for p in pairs if p.ratio is not None]
    out = Summary(table, len(pairs), sorted({p.metric for p in pairs}), exp(fmean(gains)))
    # The interval takes the run (the process) as the unit: each run's mean over the rows of its signed
    # logs, so that what one run shares across its rows (its GPU's state) is counted once, not per row.
    per_run: dict[str, list[float]] = {}
    for side in ("base", "head"):
        runs = [_signed_logs(p, side) for p in pairs]
        keys = set(runs[0])
        if any(set(r) != keys or len(r) != len(getattr(p, side)) for r, p in zip(runs, pairs)):
            out.why_no_interval = f"the {side}'s rows were not all measured in the same runs"
            return out
        if len(keys) < 2 or None in keys:
            out.why_no_interval = f"the {side} has one run"
            return out
        per_run[side] = [fmean(r[k] for r in runs) for k in sorted(keys, key=str)]
    test = stats.welch(per_run["base"], per_run["head"])
    low, high = test.interval(rule.confidence)
    out.ci_low, out.ci_high = exp(low), exp(high)
    return out


def summaries(pairs: Sequence[Pair], rule: Rule = DEFAULT_RULE) -> list[Summary]:
    """The whole compare's summary, then one per table where the compare has more than one table."""
    rows = _summary_rows(pairs)
    if not rows:
        return []
    out = [summarise(None, rows, rule)]
    tables = list(dict.fromkeys(p.table for p in rows))
    if len(tables) > 1:
        out += [summarise(t, [p for p in rows if p.table == t], rule) for t in tables]
    return out


@dataclass
class Comparison:
    pairs: list[Pair]
    rule: Rule
    allowed: list[Difference] = field(default_factory=list)  # differing facts the user allowed
    notes: list[str] = field(default_factory=list)
    ab: AbRecord | None = None  # one A/B artifact's record: which checkout is which side
    target: str | None = None  # the target the rows are of, where the artifacts name it
    artifacts: dict[str, str] = field(default_factory=dict)  # "base"/"head": the file (or store) each side came from
    commits: dict[str, str | None] = field(default_factory=dict)  # "base"/"head": the commit each side ran

    @property
    def summary(self) -> list[Summary]:
        return summaries(self.pairs, self.rule)
