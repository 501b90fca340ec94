"""``gpuverify check``: each artifact held to what it re-derives to, printed as MISMATCH lines."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.verify.check import check_artifact, signature_problems

PARTLY = "verdict checked only partly (old artifact: it has no run record)"


UNVERIFIED = "signatures not verified: pass --allowed-signers FILE to check who wrote these files"


UNSEALED_WATCH = (
    "watch not sealed in this log (sealed before the watch was): its foreign processes, clock events "
    "and SM clocks are held to nothing but each other"
)


def run_check(artifact: str, allowed_signers: str | None = None) -> int:
    """``gpuverify check`` of one file: print every difference as a MISMATCH line; 0 when there is none."""
    return check_file(artifact, allowed_signers)[0]


def check_file(artifact: str, allowed_signers: str | None = None) -> tuple[int, Artifact | None]:
    """As :func:`run_check`, with the artifact read (None when it could not be) for checks across files."""
    from pytest_gpuverify.verify.provenance import unsealed_watch
    from pytest_gpuverify.verify.schemas import SchemaError, load_checked

    path = Path(artifact)
    art: Artifact | None = None
    try:
        loaded = load_checked(path)
    except FileNotFoundError:
        print(f"gpuverify: {artifact}: no such file", file=sys.stderr)
        return 2, None
    except SchemaError as exc:
        problems = [f"schema: {p}" for p in exc.problems]
    else:
        art, problems = loaded, check_artifact(loaded, path)
    if allowed_signers is not None:  # a file too broken to read is still held to its signature
        problems += signature_problems(art, path, Path(allowed_signers))
    for problem in problems:
        print(f"MISMATCH {problem}")
    if art is not None and art.run is None:
        print(f"{artifact}: {PARTLY}")
    if art is not None and unsealed_watch(art, path):
        print(f"{artifact}: {UNSEALED_WATCH}")
    if art is not None and art.signed_by and allowed_signers is None:
        print(f"{artifact}: {UNVERIFIED}")
    if problems or art is None:
        print(f"{artifact}: {len(problems)} difference(s) between the artifact and what it re-derives to")
        return 1, art
    checked = "and verdict" if art.run is None else "verdict and reasons"
    signed = f"; signed by {art.signed_by}, verified" if allowed_signers is not None else ""
    print(f"{artifact}: OK (raw output sha256, numbers, correctness, {checked} match{signed})")
    return 0, art
