"""The attestation a demo session writes on the simulated ROCm host: bench_<topic>.intoto.jsonl beside
the artifact, signed with a --gpu-attest-key file; ``gpuverify check --policy`` passes on it with a
signed VSA, and fails once the raw log is edited."""

from __future__ import annotations

import json

from check_edits import check
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from pytest_gpuverify.attest.statement import PREDICATE_TYPE, parse_statement
from pytest_gpuverify.attest.verify import read_envelope
from pytest_gpuverify.attest.vsa import VSA_TYPE

GEMM = "op_tests/test_gemm_a8w8.py"


def test_a_session_writes_the_attestation_and_check_policy_holds_it(sandbox, tmp_path, capsys):
    key = ed25519.Ed25519PrivateKey.generate()
    priv, pub = tmp_path / "attest.pem", tmp_path / "attest.pub"
    priv.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH))
    res = sandbox.pytest(GEMM, f"--gpu-attest-key={priv}")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", res.stdout.decode()[-2000:]
    folder = sandbox.tickets / "T-1"
    att = folder / "bench_gemm_a8w8.intoto.jsonl"
    statement = parse_statement(read_envelope(att).payload_bytes())  # the in-toto library's validation
    assert statement.pb.predicate_type == PREDICATE_TYPE
    names = {s.name for s in statement.pb.subject}
    assert {"bench_gemm_a8w8.json", art.raw_output} <= names
    policy = tmp_path / "policy.toml"
    policy.write_text(f'required_subjects = ["artifact", "raw_output", "commit"]\n[signers]\npublic_keys = ["{pub}"]\n')
    artifact = folder / "bench_gemm_a8w8.json"
    vsa = tmp_path / "vsa.intoto.jsonl"
    rc, mismatches, out = check(
        artifact, capsys, "--policy", str(policy), "--vsa-out", str(vsa), "--vsa-key", str(priv)
    )
    assert rc == 0 and not mismatches, out
    assert "attestation signed by SHA256:" in out
    summary = json.loads(read_envelope(vsa).payload_bytes())
    assert summary["predicateType"] == VSA_TYPE and summary["predicate"]["verificationResult"] == "PASSED"
    assert summary["predicate"]["policy"]["uri"] == policy.resolve().as_uri()

    raw = folder / art.raw_output
    raw.write_bytes(raw.read_bytes() + b"\n")
    rc, mismatches, out = check(artifact, capsys, "--policy", str(policy), "--vsa-out", str(vsa))
    assert rc == 1 and any(m.startswith(f"subject {art.raw_output}: sha256") for m in mismatches), out
    assert json.loads(read_envelope(vsa).payload_bytes())["predicate"]["verificationResult"] == "FAILED"
