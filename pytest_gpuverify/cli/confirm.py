"""``gpuverify compare --confirm``: before a REGRESSED row is reported, the two commits it compares (the
base's and the head's, from the artifacts or the store) run again as one interleaved A/B on one GPU
(ab_runner.py), in this checkout, which must be at the head's commit. A row the A/B also calls REGRESSED
is reported ``confirmed by A/B``; any other row takes the A/B's call and says that the compare's
REGRESSED was not confirmed. The exit status counts confirmed regressions only; an A/B that could not
run confirms nothing and exits 2 (a gate must not pass on a check that never ran)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gpuverify.cli.ab_runner import DEFAULT_REPEATS, AbOutcome, head_of, made_up_ticket, run_ab
from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import Refused, checked, decide, exit_code
from pytest_gpuverify.compare.core import DEFAULT_RULE, REGRESSED, Comparison, Pair, Rule
from pytest_gpuverify.history.records import commit_of
from pytest_gpuverify.records.artifact import Artifact

if TYPE_CHECKING:
    from pytest_gpuverify.history.db import StoreName
    from pytest_gpuverify.history.reader import Reader

CONFIRMED = "confirmed by A/B"


class ConfirmError(Exception):
    """--confirm cannot re-measure from here; the message names what and the fix."""


@dataclass
class Compared:
    """A compare's result and what --confirm needs to re-measure it: the target and the two commits."""

    result: Comparison
    target: str | None
    base_sha: str | None
    head_sha: str | None
    base_said: str = ""  # how the base commit was chosen, when the base was several
    marks: dict[int, bool | None] = field(default_factory=dict)  # pair index -> confirmed (None: not re-measured)


def from_artifacts(base: str, head: str | None, rule: Rule, may_differ: frozenset[str]) -> Compared:
    labels = (f"the base ({base})", f"the head ({head})") if head else (base, base)
    arts = [checked(base)] + ([checked(head)] if head else [])
    result = decide(arts[0], arts[1] if head else None, rule, may_differ, labels)
    result.artifacts = {"base": base, "head": head or base}
    head_art = arts[-1]
    if head is None:  # one A/B artifact: its two sides' commits
        ab = arts[0].ab
        return Compared(result, _target(head_art), ab.base_sha if ab else None, ab.head_sha if ab else None)
    return Compared(result, _target(head_art), commit_of(arts[0])[0], commit_of(head_art)[0])


def from_history(
    store: StoreName, head: str, history: dict, rule: Rule, may_differ: frozenset[str], reader: Reader
) -> Compared:
    """``history``: the store's ``ref``, ``last``, ``baseline`` and ``repo``, as ``compare --history`` takes them."""
    from pytest_gpuverify.history.compare import against_history, base_runs
    from pytest_gpuverify.history.db import shown
    from pytest_gpuverify.records.artifact import sha256_file

    head_art = checked(head)
    where = (history["ref"], history["last"])
    result = against_history(
        reader, shown(store), head_art, head, *where, rule, may_differ, history["baseline"], history["repo"]
    )
    picked = base_runs(
        reader,
        shown(store),
        head_art,
        sha256_file(Path(head)),
        *where,
        may_differ,
        history["baseline"],
        history["repo"],
    ).runs
    shas = list(dict.fromkeys(r.sha for r in picked if r.sha))
    said = f"the newest of the base's {len(shas)} commits" if len(shas) > 1 else ""
    return Compared(result, _target(head_art), shas[0] if shas else None, commit_of(head_art)[0], said)


def _target(art: Artifact) -> str | None:
    return art.target.name if art.target else None


def _key(pair: Pair) -> tuple:
    return (pair.table, pair.shape, pair.name, pair.stat, pair.metric)


def precheck(compared: Compared, checkout: Path) -> Path:
    """The checkout's top level when the A/B can run there; ConfirmError (one line, with the fix) otherwise."""
    if compared.target is None:
        raise ConfirmError("the head names no target: the A/B runs a declared target or test file")
    if not compared.base_sha or not compared.head_sha:
        raise ConfirmError(
            "the artifacts record no commit for "
            + ("the base" if not compared.base_sha else "the head")
            + ": the A/B checks commits out. Fix: compare artifacts of runs in a git checkout"
        )
    top, sha = head_of(checkout)
    if top is None or sha is None:
        raise ConfirmError(
            f"{checkout} is not a git checkout. Fix: run it in the head's checkout, at {compared.head_sha}"
        )
    if sha != compared.head_sha:
        raise ConfirmError(
            f"the checkout {top} is at {sha[:12]}, the head ran {compared.head_sha[:12]}. "
            f"Fix: `git checkout {compared.head_sha}` there (or run it in the head's checkout)"
        )
    return top


def apply(compared: Compared, outcome: AbOutcome, repeats: int) -> None:
    """Mark each REGRESSED row confirmed or not from the A/B's calls (its rows by compare's key)."""
    regressed = [i for i, p in enumerate(compared.result.pairs) if p.call == REGRESSED]
    base, head = (compared.base_sha or "?")[:12], (compared.head_sha or "?")[:12]
    how = f"an A/B of {base} (A) and {head} (B) on one GPU, {repeats} runs a side"
    if outcome.result is None:
        for i in regressed:
            pair = compared.result.pairs[i]
            pair.why = f"REGRESSED not re-measured (the A/B could not run); {pair.why}"
            compared.marks[i] = None
        compared.result.notes.append(f"confirm: {len(regressed)} REGRESSED row(s) not re-measured: {outcome.problem}")
        return
    measured = {_key(p): p for p in outcome.result.pairs}
    for i in regressed:
        pair = compared.result.pairs[i]
        again = measured.get(_key(pair))
        if again is not None and again.call == REGRESSED:
            pair.why = f"{CONFIRMED} ({again.why}); {pair.why}"
            compared.marks[i] = True
            continue
        said = f"{again.call}: {again.why}" if again is not None else "the A/B printed no such row"
        pair.why = f"REGRESSED not {CONFIRMED} ({said}); {pair.why}"
        pair.call = again.call if again is not None else "INCONCLUSIVE"
        compared.marks[i] = False
    confirmed = sum(1 for v in compared.marks.values() if v)
    base_said = f" ({compared.base_said})" if compared.base_said else ""
    compared.result.notes.append(
        f"confirm: {len(regressed)} REGRESSED row(s) re-measured by {how}{base_said}: "
        f"{confirmed} confirmed, {len(regressed) - confirmed} not; {outcome.artifact_path}"
    )


def output(compared: Compared, outcome: AbOutcome | None, fmt: str) -> str:
    result = compared.result
    if fmt != "json":
        return render.markdown(result) if fmt == "markdown" else render.table(result)
    doc = json.loads(render.as_json(result))
    for i, pair in enumerate(doc.get("pairs", [])):
        if i in compared.marks:
            pair["confirmed"] = compared.marks[i]
    doc["confirm"] = {
        "base_sha": compared.base_sha,
        "head_sha": compared.head_sha,
        "artifact": str(outcome.artifact_path) if outcome and outcome.artifact_path else None,
        "problem": outcome.problem if outcome else None,
        "confirmed": sum(1 for v in compared.marks.values() if v),
        "not_confirmed": sum(1 for v in compared.marks.values() if v is False),
    }
    return json.dumps(doc, indent=2)


def run_confirmed(
    base: str,
    head: str | None,
    rule: Rule = DEFAULT_RULE,
    fmt: str = "table",
    may_differ: frozenset[str] = frozenset(),
    fail_on_inconclusive: bool = False,
    repeats: int = DEFAULT_REPEATS,
    pytest_args: Sequence[str] = (),
    history: dict | None = None,
    checkout: Path | None = None,
) -> int:
    """``gpuverify compare --confirm``: 0 no confirmed regression; 1 a confirmed one (or INCONCLUSIVE, when
    asked); 2 refused, bad input, or the A/B that had to confirm could not run."""
    try:
        if history is not None:
            from pytest_gpuverify.history.command import store_path
            from pytest_gpuverify.history.db import StoreError
            from pytest_gpuverify.history.reader import open_reader

            path = store_path(history["store"])
            try:
                with closing(open_reader(path)) as reader:
                    compared = from_history(path, base, history, rule, may_differ, reader)
            except StoreError as exc:
                return _fail(str(exc))
        else:
            compared = from_artifacts(base, head, rule, may_differ)
    except Refused as exc:
        return _fail(f"refused: {exc}")
    if not compared.result.pairs:
        return _fail(f"no perf rows to compare in {base}" + (f" and {head}" if head else ""))
    if not any(p.call == REGRESSED for p in compared.result.pairs):
        compared.result.notes.append("confirm: no row REGRESSED, nothing to re-measure")
        print(output(compared, None, fmt))
        return exit_code(compared.result.pairs, fail_on_inconclusive)
    try:
        top = precheck(compared, checkout or Path.cwd())
    except ConfirmError as exc:
        return _fail(str(exc))
    assert compared.target is not None and compared.base_sha is not None and compared.head_sha is not None
    print(
        f"gpuverify compare --confirm: re-measuring {sum(p.call == REGRESSED for p in compared.result.pairs)} "
        f"REGRESSED row(s): A/B of {compared.base_sha[:12]} and {compared.head_sha[:12]}, {repeats} runs a side",
        file=sys.stderr,
        flush=True,
    )
    outcome = run_ab(
        top,
        compared.target,
        compared.base_sha,
        repeats,
        made_up_ticket("confirm", compared.head_sha),
        pytest_args,
        rule,
    )
    apply(compared, outcome, repeats)
    print(output(compared, outcome, fmt))
    if outcome.result is None:
        return _fail(f"the A/B could not confirm the REGRESSED rows: {outcome.problem}")
    return exit_code(compared.result.pairs, fail_on_inconclusive)


def _fail(message: str) -> int:
    print(f"gpuverify compare --confirm: {message}", file=sys.stderr)
    return 2
