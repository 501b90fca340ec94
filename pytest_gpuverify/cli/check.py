"""``gpuverify check``: each artifact held to what it re-derives to, printed as MISMATCH lines."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_gpuverify.attest.policy import Policy
from pytest_gpuverify.attest.verify import Verified
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


def check_file(
    artifact: str, allowed_signers: str | None = None, attest: AttestCheck | None = None
) -> tuple[int, Artifact | None]:
    """As :func:`run_check`, with the artifact read (None when it could not be) for checks across files.
    ``attest``: the policy its attestation is held to first, and where the VSA goes."""
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
    attested = attest.check(art, path) if attest is not None else None
    if attested is not None:
        problems = attested.problems + problems
    for problem in problems:
        print(f"MISMATCH {problem}")
    if art is not None and art.run is None:
        print(f"{artifact}: {PARTLY}")
    if art is not None and unsealed_watch(art, path):
        print(f"{artifact}: {UNSEALED_WATCH}")
    if art is not None and art.signed_by and allowed_signers is None:
        print(f"{artifact}: {UNVERIFIED}")
    if attest is not None:
        attest.report(artifact, path, attested, passed=not problems and art is not None)
    if problems or art is None:
        print(f"{artifact}: {len(problems)} difference(s) between the artifact and what it re-derives to")
        return 1, art
    checked = "and verdict" if art.run is None else "verdict and reasons"
    signed = f"; signed by {art.signed_by}, verified" if allowed_signers is not None else ""
    print(f"{artifact}: OK (raw output sha256, numbers, correctness, {checked} match{signed})")
    return 0, art


class AttestCheck:
    """``--policy``: each artifact's attestation held to the policy; ``--vsa-out``: the verification
    summary written (signed with ``--vsa-key`` when given)."""

    def __init__(self, policy: Policy, vsa_out: Path | None = None, vsa_key: Path | None = None) -> None:
        self.policy, self.vsa_out, self.vsa_key = policy, vsa_out, vsa_key

    def check(self, art: Artifact | None, path: Path) -> Verified:
        from pytest_gpuverify.verify.attestation import policy_problems

        return policy_problems(art, path, self.policy)

    def report(self, artifact: str, path: Path, attested: Verified | None, passed: bool) -> None:
        from pytest_gpuverify import __version__
        from pytest_gpuverify.attest.statement import attestation_path
        from pytest_gpuverify.attest.vsa import vsa_envelope
        from pytest_gpuverify.common.files import RESULT_MODE, write_atomic

        if attested is not None:
            signers = ", ".join(attested.signers) or ("unsigned" if attested.unsigned else "no verified signature")
            print(f"{artifact}: attestation {'unsigned' if attested.unsigned else 'signed by ' + signers}")
        if self.vsa_out is None or not path.is_file():
            return
        signed = bool(attested and attested.signers)
        try:
            env = vsa_envelope(
                path,
                attestation_path(path),
                self.policy.path,
                self.policy.sha256,
                passed,
                signed,
                __version__,
                self.vsa_key,
            )
            write_atomic(self.vsa_out, (env.line() + "\n").encode(), mode=RESULT_MODE)
        except (OSError, ValueError) as exc:
            print(f"gpuverify: --vsa-out {self.vsa_out}: not written ({exc}); check --vsa-key and the folder")
            return
        print(f"{artifact}: verification summary {'PASSED' if passed else 'FAILED'} written to {self.vsa_out}")
