"""``gpuverify compare [--factor F] [--may-differ NAME] [--fail-on-inconclusive] [--json|--markdown]
BASE.json [HEAD.json]``.

Each input is ``gpuverify check``ed first. Only PASS is compared against PASS; two artifacts must be
of like work (identity.py) unless the differing facts are named as allowed; the clocks recorded per
run are held to clocks.py; then each row is called by core.Rule. Exits: 0 nothing REGRESSED, 1 a row
REGRESSED (or, with ``--fail-on-inconclusive``, INCONCLUSIVE), 2 refused or bad input."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.autotune import autotune_notes
from pytest_gpuverify.compare.clocks import clock_problem
from pytest_gpuverify.compare.core import (
    DEFAULT_RULE,
    INCONCLUSIVE,
    REGRESSED,
    Comparison,
    Pair,
    Rule,
    compare,
    side_of,
)
from pytest_gpuverify.compare.identity import Difference, change_notes, differences, identity, unrecorded
from pytest_gpuverify.compare.kernels import kernel_notes
from pytest_gpuverify.records.artifact import Artifact, GpuWatch, sha256_file


class Refused(Exception):
    """An input that cannot be trusted or compared; the message names the file."""


def checked(path: str) -> Artifact:
    """The artifact at ``path`` after ``gpuverify check``'s own checks; Refused when any fails."""
    from pytest_gpuverify.verify.check import check_artifact
    from pytest_gpuverify.verify.schemas import SchemaError, load_checked

    try:
        art = load_checked(Path(path))
    except FileNotFoundError:
        raise Refused(f"{path}: no such file") from None
    except SchemaError as exc:
        raise Refused(f"{path}: fails gpuverify check: schema: {exc.problems[0]}") from None
    problems = check_artifact(art, Path(path))
    if problems:
        raise Refused(f"{path}: fails gpuverify check ({len(problems)} difference(s)): {problems[0]}")
    return art


def refuse_same(base: str, head: str) -> None:
    """Refused where both sides are one artifact (one path, or files of one sha256): its runs against
    themselves are no comparison."""
    paths = [Path(base), Path(head)]
    if not all(p.is_file() for p in paths):
        return  # checked() names a missing file
    if paths[0].resolve() != paths[1].resolve() and sha256_file(paths[0]) != sha256_file(paths[1]):
        return
    raise Refused(
        f"{base} and {head} are the same artifact (sha256 {sha256_file(paths[0])[:12]}): a run against "
        "itself says nothing. Fix: name the base's and the head's own artifacts, or one A/B artifact alone"
    )


def not_passing(label: str, art: Artifact) -> str | None:
    """Why ``art`` proves nothing to compare (its verdict is not PASS), naming the side; None if PASS."""
    if art.verdict == "PASS":
        return None
    first = art.reasons[0] if art.reasons else "no reason recorded"
    return f"{label} is {art.verdict} ({first}); only PASS is compared against PASS"


def own_watch(art: Artifact, side: str | None) -> list[GpuWatch]:
    """The watch records of one side: of an A/B artifact's ``side``, else (side None) the artifact's
    own runs: the head side of an A/B artifact, every record of another."""
    if side is not None:
        return [w for w in art.watch if side_of(w.side) == side]
    if any(side_of(w.side) for w in art.watch):
        return [w for w in art.watch if side_of(w.side) == "head"]
    return list(art.watch)


def decide(
    base: Artifact,
    head: Artifact | None,
    rule: Rule = DEFAULT_RULE,
    may_differ: frozenset[str] = frozenset(),
    labels: tuple[str, str] = ("the base", "the head"),
) -> Comparison:
    """Every check before a call, then the calls; Refused (with the reasons) where no compare may be made."""
    sides = [(labels[0], base)] + ([(labels[1], head)] if head is not None else [])
    bad = [why for why in (not_passing(label, art) for label, art in sides) if why]
    if bad:
        raise Refused("; ".join(bad))
    allowed: list[Difference] = []
    if head is not None:
        found = differences(base, head)
        refused = [d for d in found if d.field not in may_differ]
        if refused:
            raise Refused(
                "the sides are not like work: "
                + "; ".join(d.describe() for d in refused)
                + " (--may-differ "
                + ",".join(d.field for d in refused)
                + " compares them anyway)"
            )
        allowed = found
    watches = (
        (own_watch(base, None), own_watch(head, None))
        if head is not None
        else (own_watch(base, "base"), own_watch(base, "head"))
    )
    clocks, notes = clock_problem(*watches)
    if head is not None:
        notes = notes + change_notes(allowed) + unrecorded(identity(base), identity(head), ("the base", "the head"))
    notes = notes + autotune_notes(base, head) + kernel_notes(base, head)
    own = head if head is not None else base
    commits = (
        {"base": base.ab.base_sha, "head": base.ab.head_sha}
        if head is None and base.ab is not None
        else {"base": commit(base), "head": commit(head)}
        if head is not None
        else {}
    )
    return Comparison(
        compare(base, head, rule, clocks),
        rule,
        allowed,
        notes,
        base.ab if head is None else None,
        own.target.name if own.target else None,
        commits=commits,
    )


def commit(art: Artifact) -> str | None:
    """The commit an artifact's own runs stood on (an A/B artifact's head), None where it does not say."""
    if art.ab is not None and art.ab.head_sha:
        return art.ab.head_sha
    return next((r.sha for r in art.repos if r.sha), None)


def exit_code(pairs: list[Pair], fail_on_inconclusive: bool = False) -> int:
    if any(p.call == REGRESSED for p in pairs):
        return 1
    return 1 if fail_on_inconclusive and any(p.call == INCONCLUSIVE for p in pairs) else 0


def run_compare(
    base: str,
    head: str | None,
    rule: Rule = DEFAULT_RULE,
    fmt: str = "table",
    may_differ: frozenset[str] = frozenset(),
    fail_on_inconclusive: bool = False,
) -> int:
    """0: compared, nothing REGRESSED; 1: something REGRESSED (or INCONCLUSIVE, when asked); 2: refused."""
    labels = (f"the base ({base})", f"the head ({head})") if head else (base, base)
    try:
        if head is not None:
            refuse_same(base, head)
        arts = [checked(base)] + ([checked(head)] if head else [])
        result = decide(arts[0], arts[1] if head else None, rule, may_differ, labels)
    except Refused as exc:
        print(f"gpuverify compare: refused: {exc}", file=sys.stderr)
        return 2
    result.artifacts = {"base": base, "head": head or base}
    if not result.pairs:
        print(
            f"gpuverify compare: no perf rows with a base and a head side in {base}" + (f" and {head}" if head else ""),
            file=sys.stderr,
        )
        return 2
    print(
        render.as_json(result)
        if fmt == "json"
        else render.markdown(result)
        if fmt == "markdown"
        else render.table(result)
    )
    return exit_code(result.pairs, fail_on_inconclusive)
