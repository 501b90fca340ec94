"""``gpuverify check --policy``: the attestation beside an artifact held to the reviewer's policy
(:mod:`pytest_gpuverify.attest.verify`) and to the artifact itself: its predicate must be the one the
artifact gives, its commits the artifact's."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_gpuverify.attest.policy import Policy
from pytest_gpuverify.attest.statement import attestation_path, predicate_of
from pytest_gpuverify.attest.verify import Verified, verify_attestation
from pytest_gpuverify.records.artifact import Artifact

DIFFERS = "the predicate or the artifact was changed after the run; fetch the originals"


def policy_problems(art: Artifact | None, artifact_path: Path, policy: Policy) -> Verified:
    """The attestation's problems under ``policy``, and those of its agreement with ``art``."""
    out = verify_attestation(attestation_path(artifact_path), artifact_path, policy)
    if art is None or out.statement is None:
        return out
    # through JSON as the statement was: the predicate holds strings, booleans and nulls only
    want = json.loads(json.dumps(predicate_of(art)))
    got = out.predicate
    for key in sorted(set(want) | set(got)):
        if want.get(key) != got.get(key):
            out.problems.append(
                f"predicate.{key} is {json.dumps(got.get(key))}, the artifact gives {json.dumps(want.get(key))}; {DIFFERS}"
            )
    repos = {r.path: r.sha for r in art.repos if r.sha}
    commits = out.commits()
    for path in sorted(set(repos) | set(commits)):
        if repos.get(path) != commits.get(path):
            out.problems.append(
                f"subject {path}: gitCommit is {commits.get(path)}, the artifact's repo says {repos.get(path)}; {DIFFERS}"
            )
    return out
