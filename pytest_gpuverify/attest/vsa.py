"""The SLSA Verification Summary Attestation (https://slsa.dev/verification_summary/v1) a policy check
emits: which artifact, under which policy (uri and sha256), by which verifier, when, and the result, as a
DSSE envelope of an in-toto Statement, signed with the verifier's key when one is given."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pytest_gpuverify.attest.dsse import Envelope, envelope, sign_with_key
from pytest_gpuverify.attest.statement import ARTIFACT, PAYLOAD_TYPE, statement_bytes
from pytest_gpuverify.records.artifact import sha256_file

VSA_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://github.com/pytest-gpuverify/pytest-gpuverify/check"
# custom levels (SLSA reserves the SLSA_ prefix): the run re-derived and its attestation held to the policy
CHECKED, SIGNED = "GPUVERIFY_RUN_CHECKED", "GPUVERIFY_RUN_SIGNED"


def vsa_envelope(
    artifact_path: Path,
    attestation: Path,
    policy_path: Path,
    policy_sha256: str,
    passed: bool,
    signed: bool,
    version: str,
    key_file: Path | None = None,
) -> Envelope:
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.statement import Statement

    inputs = []
    if attestation.is_file():
        inputs.append({"uri": attestation.resolve().as_uri(), "digest": {"sha256": sha256_file(attestation)}})
    predicate = {
        "verifier": {"id": VERIFIER_ID, "version": {"pytest-gpuverify": version}},
        "timeVerified": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "resourceUri": artifact_path.resolve().as_uri(),
        "policy": {"uri": policy_path.resolve().as_uri(), "digest": {"sha256": policy_sha256}},
        "inputAttestations": inputs,
        "verificationResult": "PASSED" if passed else "FAILED",
        "verifiedLevels": ([CHECKED, SIGNED] if signed else [CHECKED]) if passed else ["FAILED"],
        "slsaVersion": "1.0",
    }
    subject = ResourceDescriptor(
        name=artifact_path.name, digest={"sha256": sha256_file(artifact_path)}, annotations={"role": ARTIFACT}
    )
    statement = Statement([subject.pb], VSA_TYPE, predicate)
    statement.validate()
    env = envelope(PAYLOAD_TYPE, statement_bytes(statement))
    if key_file is not None:
        sign_with_key(env, key_file)
    return env
