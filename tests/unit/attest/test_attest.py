"""The attestation beside an artifact: built with the in-toto library's models, signed with an SSH key
(ssh-keygen) and with ed25519/ECDSA key files (cryptography), held to a policy; each edit of a subject
file, the predicate, the envelope's payload or a signature fails, and the VSA says what was verified."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from pytest_gpuverify.attest.dsse import Envelope, pae
from pytest_gpuverify.attest.policy import PolicyError, load_policy
from pytest_gpuverify.attest.statement import (
    PREDICATE_TYPE,
    SCHEMA_FILE,
    attestation_path,
    parse_statement,
    predicate_of,
)
from pytest_gpuverify.attest.verify import read_envelope
from pytest_gpuverify.attest.vsa import VSA_TYPE, vsa_envelope
from pytest_gpuverify.attest.write import write_attestation
from pytest_gpuverify.records.artifact import Artifact, PerfRow, RepoRecord, dump_artifact, sha256_file
from pytest_gpuverify.verify.attestation import policy_problems

SHA = "0123456789abcdef0123456789abcdef01234567"


def stored(folder: Path) -> tuple[Artifact, Path]:
    (folder / "bench_gemm.log").write_text("shape 1x1 time 1.5 us\nPASS\n")
    (folder / "bench_gemm.junit.xml").write_text("<testsuite tests='1'/>\n")
    art = Artifact(
        topic="gemm",
        key="T-1",
        ts="2026-12-03T10:00:00Z",
        raw_output="bench_gemm.log",
        junit_xml="bench_gemm.junit.xml",
        repos=[RepoRecord(path="/work/aiter", sha=SHA)],
        perf=[PerfRow(shape="1x1", name="gemm", us_median=1.5, runs=3)],
        verdict="PASS",
    )
    path = folder / "bench_gemm.json"
    path.write_bytes(dump_artifact(art))
    return art, path


def key_file(folder: Path, kind: str) -> tuple[Path, Path]:
    """(private key file, public key file) of ``kind``: ed25519 PEM, ECDSA PEM, or an OpenSSH key by ssh-keygen."""
    priv, pub = folder / f"{kind}.key", folder / f"{kind}.pub"
    if kind == "ssh":
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", str(priv)], check=True)
        (folder / "ssh.key.pub").rename(pub)
        return priv, pub
    key = ed25519.Ed25519PrivateKey.generate() if kind == "ed25519" else ec.generate_private_key(ec.SECP256R1())
    priv.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    pub.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return priv, pub


def policy_file(folder: Path, body: str) -> Path:
    path = folder / "policy.toml"
    path.write_text(body)
    return path


@pytest.fixture
def signed(tmp_path):
    """An artifact, its attestation signed with an ed25519 key file, and a policy that trusts that key."""
    art, path = stored(tmp_path)
    priv, pub = key_file(tmp_path, "ed25519")
    assert write_attestation(art, path, key_file=priv) == []
    policy = load_policy(policy_file(tmp_path, f'[signers]\npublic_keys = ["{pub.name}"]\n'))
    return art, path, policy


def rewrite(att: Path, change) -> None:
    env = json.loads(att.read_text())
    change(env)
    att.write_text(json.dumps(env) + "\n")


def test_the_statement_is_an_in_toto_v1_statement_of_every_listed_output(signed):
    art, path, _ = signed
    att = attestation_path(path)
    assert att.name == "bench_gemm.intoto.jsonl" and len(att.read_text().splitlines()) == 1
    env = read_envelope(att)
    assert env.payload_type == "application/vnd.in-toto+json"
    statement = parse_statement(env.payload_bytes())  # the in-toto attestation library validates it
    data = json.loads(env.payload_bytes())
    assert data["_type"] == "https://in-toto.io/Statement/v1" and data["predicateType"] == PREDICATE_TYPE
    subjects = {s["name"]: s for s in data["subject"]}
    assert subjects["bench_gemm.json"]["digest"] == {"sha256": sha256_file(path)}
    assert subjects["bench_gemm.log"]["digest"] == {"sha256": sha256_file(path.parent / "bench_gemm.log")}
    assert subjects["bench_gemm.junit.xml"]["annotations"] == {"role": "junit"}
    assert subjects["/work/aiter"]["digest"] == {"gitCommit": SHA}
    assert data["predicate"] == predicate_of(art) and data["predicate"]["verdict"] == "PASS"
    assert len(data["predicate"]["numbers"]["sha256"]) == 64 and statement.pb.predicate_type == PREDICATE_TYPE


def test_the_predicate_schema_holds_the_predicate_and_the_docs_ship_the_same_schema(signed):
    jsonschema = pytest.importorskip("jsonschema")
    art, _, _ = signed
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.validate(predicate_of(art), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**predicate_of(art), "verdict": "MAYBE"}, schema)
    docs = Path(__file__).parents[3] / "docs" / "run-v1.schema.json"
    assert docs.read_text() == SCHEMA_FILE.read_text()


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa", "ssh"])
def test_each_key_kind_signs_and_verifies(tmp_path, kind):
    art, path = stored(tmp_path)
    priv, pub = key_file(tmp_path, kind)
    if kind == "ssh":  # the Signing table's key: ssh-keygen -Y sign over the PAE bytes
        assert write_attestation(art, path, ssh_key=priv) == []
        (tmp_path / "allowed").write_text(f"ci {pub.read_text().strip()}\n")
        body = '[signers]\nallowed_signers = "allowed"\n'
    else:
        assert write_attestation(art, path, key_file=priv) == []
        body = f'[signers]\npublic_keys = ["{pub.name}"]\n'
    env = read_envelope(attestation_path(path))
    out = policy_problems(art, path, load_policy(policy_file(tmp_path, body)))
    assert out.problems == [] and not out.unsigned
    assert out.signers == (["ci"] if kind == "ssh" else [env.signatures[0].keyid])
    assert env.signatures[0].keyid.startswith("SHA256:")


def test_an_ssh_key_signature_matches_ssh_keygens_fingerprint(tmp_path):
    art, path = stored(tmp_path)
    priv, pub = key_file(tmp_path, "ssh")
    write_attestation(art, path, ssh_key=priv)
    printed = subprocess.run(["ssh-keygen", "-l", "-f", str(pub)], capture_output=True, text=True, check=True).stdout
    assert read_envelope(attestation_path(path)).signatures[0].keyid == printed.split()[1]


def test_unsigned_is_written_and_said(tmp_path):
    art, path = stored(tmp_path)
    assert write_attestation(art, path) == []
    assert read_envelope(attestation_path(path)).signatures == []
    open_policy = load_policy(policy_file(tmp_path, ""))
    out = policy_problems(art, path, open_policy)
    assert out.unsigned and out.problems == []
    _, pub = key_file(tmp_path, "ed25519")
    strict = load_policy(policy_file(tmp_path, f'[signers]\npublic_keys = ["{pub.name}"]\n'))
    problems = policy_problems(art, path, strict).problems
    assert len(problems) == 1 and "unsigned" in problems[0] and "--gpu-attest-key" in problems[0]


def test_a_changed_subject_byte_fails_naming_the_subject(signed):
    art, path, policy = signed
    log = path.parent / "bench_gemm.log"
    log.write_bytes(log.read_bytes().replace(b"1.5", b"1.4"))
    problems = policy_problems(art, path, policy).problems
    assert len(problems) == 1 and problems[0].startswith("subject bench_gemm.log: sha256")


def test_a_changed_predicate_field_fails(signed):
    art, path, policy = signed
    changed = art.model_copy(update={"verdict": "FAIL"})
    problems = policy_problems(changed, path, policy).problems
    assert [p.split(" is ")[0] for p in problems] == ["predicate.verdict"]


def test_a_changed_payload_fails_its_signature(signed):
    art, path, policy = signed

    def to_fail(env):
        payload = json.loads(base64.b64decode(env["payload"]))
        payload["predicate"]["verdict"] = "FAIL"
        env["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()

    rewrite(attestation_path(path), to_fail)
    problems = policy_problems(art, path, policy).problems
    assert any("signature 0" in p and "does not verify" in p for p in problems), problems
    assert any(p.startswith("predicate.verdict") for p in problems), problems


def test_a_changed_signature_or_payload_type_fails(signed, tmp_path):
    art, path, policy = signed
    att = attestation_path(path)
    original = att.read_text()

    def flip(env):
        raw = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
        raw[0] ^= 1
        env["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()

    rewrite(att, flip)
    problems = policy_problems(art, path, policy).problems
    assert len(problems) == 1 and "signature 0" in problems[0] and "does not verify" in problems[0]
    att.write_text(original)
    rewrite(att, lambda env: env.update(payloadType="text/plain"))
    problems = policy_problems(art, path, policy).problems
    assert any("payloadType" in p for p in problems) and any("signature 0" in p for p in problems)


def test_the_pae_is_dsses():
    assert pae("t", b"ab") == b"DSSEv1 1 t 2 ab"


def test_a_policy_names_its_bad_key(tmp_path):
    with pytest.raises(PolicyError, match="predicate_typo"):
        load_policy(policy_file(tmp_path, 'predicate_typo = ["x"]\n'))
    with pytest.raises(PolicyError, match="no such file"):
        load_policy(policy_file(tmp_path, '[signers]\nallowed_signers = "nowhere"\n'))
    with pytest.raises(PolicyError, match="not TOML"):
        load_policy(policy_file(tmp_path, "[signers\n"))


def test_a_predicate_type_the_policy_does_not_accept_fails(signed, tmp_path):
    art, path, _ = signed
    policy = load_policy(policy_file(tmp_path, 'predicate_types = ["https://example.org/other/v1"]\n'))
    problems = policy_problems(art, path, policy).problems
    assert len(problems) == 1 and "predicateType" in problems[0]


def test_the_vsa_names_the_policy_and_the_result_and_is_signed(signed, tmp_path):
    art, path, policy = signed
    vsa_key, vsa_pub = key_file(tmp_path, "ecdsa")
    env = vsa_envelope(path, attestation_path(path), policy.path, policy.sha256, True, True, "0.1.0", vsa_key)
    statement = parse_statement(env.payload_bytes())
    data = json.loads(env.payload_bytes())
    assert statement.pb.predicate_type == VSA_TYPE
    predicate = data["predicate"]
    assert predicate["verificationResult"] == "PASSED"
    assert predicate["policy"] == {"uri": policy.path.resolve().as_uri(), "digest": {"sha256": policy.sha256}}
    assert predicate["resourceUri"] == path.resolve().as_uri() and predicate["verifier"]["id"].endswith("/check")
    assert data["subject"][0]["digest"] == {"sha256": sha256_file(path)}
    # the VSA's own signature verifies with the verifier's public key, and not once its payload changes
    from pytest_gpuverify.attest.dsse import load_public_key, public_fingerprint, verify_signature

    pub = load_public_key(vsa_pub)
    keys = {public_fingerprint(pub): pub}
    assert verify_signature(env, env.signatures[0], keys, None)[1] is None
    forged = Envelope.model_validate(
        {
            **json.loads(env.line()),
            "payload": base64.b64encode(env.payload_bytes().replace(b"PASSED", b"FAILED")).decode(),
        }
    )
    assert verify_signature(forged, forged.signatures[0], keys, None)[1] is not None
    failed = vsa_envelope(path, attestation_path(path), policy.path, policy.sha256, False, False, "0.1.0")
    assert json.loads(failed.payload_bytes())["predicate"]["verifiedLevels"] == ["FAILED"] and not failed.signatures


def test_a_pinned_workflow_is_verified_by_gh_and_its_absence_is_named(signed, tmp_path, monkeypatch):
    art, path, _ = signed
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no gh: the pinned workflow cannot be verified
    policy = load_policy(policy_file(tmp_path, '[github]\nworkflow = "org/repo/.github/workflows/gpu.yml"\n'))
    problems = policy_problems(art, path, policy).problems
    assert len(problems) == 1 and problems[0].startswith("github.workflow org/repo/.github/workflows/gpu.yml: gh")


def test_a_moved_aside_artifact_keeps_its_attestation_and_it_still_verifies(signed):
    from pytest_gpuverify.engine.store import keep_previous

    art, path, policy = signed
    keep_previous(path)
    aside = next(path.parent.glob("bench_gemm.2*.json"))
    assert attestation_path(aside).is_file() and not attestation_path(path).exists()
    assert policy_problems(art, aside, policy).problems == []
