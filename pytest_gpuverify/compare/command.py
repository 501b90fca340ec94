"""``gpuverify compare [--factor F] [--json|--markdown] BASE.json [HEAD.json]``: each input is
``gpuverify check``ed first; a pair whose correctness is not PASS on both sides is never compared."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from pytest_gpuverify.engine.artifact import Artifact
from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.core import compare


class Refused(Exception):
    """An input that cannot be trusted or compared; the message names the file."""


def checked(path: str) -> Artifact:
    """The artifact at ``path`` after ``gpuverify check``'s own checks; Refused when any fails."""
    from pytest_gpuverify.cli.check import check_artifact
    from pytest_gpuverify.engine.schemas import SchemaError, load_checked

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


def _not_passing(path: str, art: Artifact) -> Optional[str]:
    if art.correctness.passed is not True:
        return f"{path}: correctness is not PASS (passed={art.correctness.passed}); not compared"
    return None


def run_compare(base: str, head: Optional[str], factor: float = 1.10, fmt: str = "table") -> int:
    """0: compared, nothing REGRESSED; 1: something REGRESSED; 2: refused."""
    try:
        arts = [checked(base)] + ([checked(head)] if head else [])
    except Refused as exc:
        print(f"gpuverify compare: {exc}", file=sys.stderr)
        return 2
    bad = [why for why in (_not_passing(p, a) for p, a in zip([base] + ([head] if head else []), arts)) if why]
    if bad:
        print("gpuverify compare: " + "\n".join(bad), file=sys.stderr)
        return 2
    pairs = compare(arts[0], arts[1] if head else None, factor)
    if not pairs:
        print(f"gpuverify compare: no perf rows with a base and a head side in {base}"
              + (f" and {head}" if head else ""), file=sys.stderr)
        return 2
    ab = arts[0].ab if head is None else None  # an A/B of two checkouts (--gpu-ab): say which is which
    if fmt == "json":
        print(render.as_json(pairs, factor, ab.model_dump() if ab else None))
    else:
        if ab is not None:
            print(f"A (base) = {ab.base_ref} {(ab.base_sha or '?')[:12]}, B (head) = {(ab.head_sha or '?')[:12]}; "
                  f"run order {' '.join(ab.order)}\n")
        print(render.markdown(pairs) if fmt == "markdown" else render.table(pairs))
    return 1 if any(p.call == "REGRESSED" for p in pairs) else 0
