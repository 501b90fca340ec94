"""Holding an attestation to a policy: its envelope's signatures, its Statement (validated with the
in-toto attestation library), the predicate type, and each file subject's sha256 against the file on
disk. Each failure is one line naming the subject, signature or field, and the fix."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from pytest_gpuverify.attest.dsse import Envelope, verify_signature
from pytest_gpuverify.attest.policy import Policy, PolicyError
from pytest_gpuverify.attest.statement import ARTIFACT, COMMIT, PAYLOAD_TYPE, as_dict, parse_statement, resolve
from pytest_gpuverify.records.artifact import sha256_file

REWRITE = "write it again from the run's files, or fetch the original"


@dataclass
class Verified:
    problems: list[str] = field(default_factory=list)
    signers: list[str] = field(default_factory=list)  # who signed, verified
    unsigned: bool = False
    statement: dict | None = None  # the Statement as JSON, once it parsed

    @property
    def predicate(self) -> dict:
        return (self.statement or {}).get("predicate", {})

    def commits(self) -> dict[str, str]:
        return {
            s.get("name", ""): s["digest"]["gitCommit"]
            for s in (self.statement or {}).get("subject", [])
            if "gitCommit" in s.get("digest", {})
        }


def read_envelope(path: Path) -> Envelope:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"{len(lines)} lines, one envelope expected")
    try:
        return Envelope.model_validate_json(lines[0])
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"not a DSSE envelope: {'.'.join(map(str, err['loc'])) or 'line'}: {err['msg']}") from None


def verify_attestation(att_path: Path, artifact_path: Path, policy: Policy) -> Verified:
    """Everything the policy asks of ``att_path``; the artifact subject is held to ``artifact_path``
    (a moved-aside artifact keeps its attestation, under a new name)."""
    out = Verified()
    name = att_path.name
    try:
        env = read_envelope(att_path)
    except FileNotFoundError:
        out.problems.append(f"attestation {att_path}: no such file; fetch it with the artifact")
        return out
    except (OSError, ValueError) as exc:
        out.problems.append(f"attestation {name}: {exc}; {REWRITE}")
        return out
    if env.payload_type != PAYLOAD_TYPE:
        out.problems.append(f"attestation {name}: payloadType is {env.payload_type!r}, not {PAYLOAD_TYPE!r}")
    _signatures(env, policy, name, out)
    try:
        statement = parse_statement(env.payload_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        out.problems.append(f"attestation {name}: payload: {exc}; {REWRITE}")
        return out
    out.statement = as_dict(statement.pb)
    ptype = statement.pb.predicate_type
    if ptype not in policy.predicate_types:
        out.problems.append(
            f"attestation {name}: predicateType {ptype} is not one the policy accepts; "
            f"add it to predicate_types in {policy.path} if you trust it"
        )
    _subjects(out.statement.get("subject", []), att_path.parent, artifact_path, policy, name, out)
    if policy.github is not None:
        out.problems += github_problems(artifact_path, policy)
    return out


def github_problems(artifact_path: Path, policy: Policy) -> list[str]:
    """The workflow's keyless attestation of the artifact (``actions/attest``: Sigstore, GitHub's
    transparency log), verified by ``gh attestation verify`` with the workflow pinned."""
    import shutil
    import subprocess

    assert policy.github is not None
    workflow = policy.github.workflow
    repo = policy.github.repo or "/".join(workflow.split("/")[:2])
    gh = shutil.which("gh")
    if gh is None:
        return [
            f"github.workflow {workflow}: gh is not installed; install GitHub's CLI to verify the workflow's attestation"
        ]
    argv = [gh, "attestation", "verify", str(artifact_path), "--repo", repo, "--signer-workflow", workflow]
    for ptype in policy.predicate_types:
        argv += ["--predicate-type", ptype]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return [f"github.workflow {workflow}: gh attestation verify did not answer in 120 s; try again"]
    if res.returncode == 0:
        return []
    said = (res.stderr or res.stdout).strip().splitlines()
    return [
        f"github.workflow {workflow}: {artifact_path.name} has no attestation by it "
        f"({said[-1] if said else f'gh exited {res.returncode}'}); attest it in that workflow (actions/attest)"
    ]


def _signatures(env: Envelope, policy: Policy, name: str, out: Verified) -> None:
    if not env.signatures:
        out.unsigned = True
        if policy.signature_required:
            out.problems.append(
                f"attestation {name}: unsigned; sign it (a Signing table key or --gpu-attest-key), "
                f"or set signers.require = false in {policy.path}"
            )
        return
    try:
        keys = policy.public_keys()
    except PolicyError as exc:
        out.problems.append(str(exc))
        return
    for i, sig in enumerate(env.signatures):
        who, why = verify_signature(env, sig, keys, policy.signers.allowed_signers)
        if who is not None:
            out.signers.append(who)
        elif policy.signature_required:
            out.problems.append(
                f"attestation {name}: signature {i} ({sig.keyid or 'no keyid'}) {why}; "
                f"the envelope or its signature was changed, or its key is not in {policy.path}"
            )
    if policy.signature_required and not out.signers and not any("signature" in p for p in out.problems):
        out.problems.append(f"attestation {name}: no signature by a signer of {policy.path}")


def _subjects(subjects: list[dict], folder: Path, artifact_path: Path, policy: Policy, name: str, out: Verified):
    roles = set()
    for subject in subjects:
        role = subject.get("annotations", {}).get("role", "")
        roles.add(role)
        sub_name = subject.get("name", "")
        if role == COMMIT:
            continue  # held to the artifact's repos (verify/attestation.py)
        want = subject.get("digest", {}).get("sha256")
        if want is None:
            out.problems.append(f"attestation {name}: subject {sub_name}: no sha256 digest; {REWRITE}")
            continue
        path = artifact_path if role == ARTIFACT else resolve(folder, sub_name)
        if not path.is_file():
            out.problems.append(f"subject {sub_name}: {path} is missing; fetch it with the artifact")
            continue
        got = sha256_file(path)
        if got != want:
            out.problems.append(
                f"subject {sub_name}: sha256 of {path.name} is {got}, the attestation says {want}; "
                "the file was changed after the run, fetch the original"
            )
    for role in policy.required_subjects:
        if role not in roles:
            out.problems.append(f"attestation {name}: no {role} subject, which {policy.path} requires")


def dumps(value) -> str:
    return json.dumps(value, sort_keys=True)
