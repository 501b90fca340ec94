"""Writing ``bench_<topic>.intoto.jsonl`` beside a stored artifact: one line, the DSSE envelope of the
run's Statement, signed with the SSH key of the env file's Signing table and/or the ``--gpu-attest-key``
file; with neither, written unsigned (``gpuverify check --policy`` then says so)."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.attest.dsse import Envelope, envelope, sign_with_key, sign_with_ssh
from pytest_gpuverify.attest.statement import PAYLOAD_TYPE, attestation_path, statement_bytes, statement_of
from pytest_gpuverify.common.files import RESULT_MODE, write_atomic
from pytest_gpuverify.records.artifact import Artifact


def build_envelope(art: Artifact, artifact_path: Path, ssh_key: Path | None, key_file: Path | None):
    """(the envelope, why a key did not sign: one line each)."""
    env: Envelope = envelope(PAYLOAD_TYPE, statement_bytes(statement_of(art, artifact_path)))
    problems: list[str] = []
    if ssh_key is not None:
        why = sign_with_ssh(env, ssh_key)
        if why:
            problems.append(f"{ssh_key}: the attestation is not signed with it ({why})")
    if key_file is not None:
        try:
            sign_with_key(env, key_file)
        except (OSError, ValueError) as exc:
            problems.append(f"--gpu-attest-key {key_file}: {exc}; give an ed25519 or ECDSA private key file")
    return env, problems


def write_attestation(
    art: Artifact, artifact_path: Path, ssh_key: Path | None = None, key_file: Path | None = None
) -> list[str]:
    """Write the attestation of the artifact stored at ``artifact_path``; the problems, one line each
    (the artifact is never lost to them: it is already written)."""
    try:
        env, problems = build_envelope(art, artifact_path, ssh_key, key_file)
        # not fsynced: the artifact it follows is, and an fsync costs more than the rest of it on some
        # disks (bench/attest.py); like the .sig files, a power cut may lose it, never make it half
        write_atomic(attestation_path(artifact_path), (env.line() + "\n").encode(), mode=RESULT_MODE, sync=False)
    except (OSError, ValueError) as exc:
        return [f"{attestation_path(artifact_path)}: not written ({exc})"]
    return problems
