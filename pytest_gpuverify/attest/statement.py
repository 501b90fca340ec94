"""The in-toto Statement (v1) about one run, built and validated with the in-toto attestation library's
models: its subjects are the artifact and every file the artifact lists as its outputs (raw logs, JUnit
reports, profiles), each by sha256, and the commits it ran, by ``gitCommit``; its predicate
(:data:`PREDICATE_TYPE`, JSON Schema ``run-v1.schema.json`` in this folder) holds the verdict, the run's
names, the machine's identity and a digest of its numbers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pytest_gpuverify.records.artifact import Artifact, sha256_file
from pytest_gpuverify.records.machine import machine_digest

PREDICATE_TYPE = "https://github.com/pytest-gpuverify/pytest-gpuverify/run/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
SCHEMA_FILE = Path(__file__).with_name("run-v1.schema.json")
SUFFIX = ".intoto.jsonl"

# a subject's role, in its ``annotations``: what a policy requires by name
ARTIFACT, RAW_OUTPUT, JUNIT, PROFILE, COMMIT = "artifact", "raw_output", "junit", "profile", "commit"
ROLES = (ARTIFACT, RAW_OUTPUT, JUNIT, PROFILE, COMMIT)


def attestation_path(artifact_path: Path) -> Path:
    """``bench_<topic>.intoto.jsonl`` beside ``bench_<topic>.json`` (and beside each moved-aside one)."""
    return artifact_path.with_name(artifact_path.name.removesuffix(".json") + SUFFIX)


def listed_outputs(art: Artifact) -> list[tuple[str, str]]:
    """(role, name as the artifact gives it) of each file the artifact lists as its outputs. Kept open:
    a list of records with a ``path`` or ``file`` (``profiles``) adds its files as they appear."""
    found: list[tuple[str, str]] = []
    if art.raw_output:
        found.append((RAW_OUTPUT, art.raw_output))
    found += [(JUNIT, name) for name in (art.junit_xml, *(r.junit_xml for r in art.runs)) if name]
    for item in getattr(art, "profiles", None) or []:
        name = item.get("path") or item.get("file") if isinstance(item, dict) else None
        name = name or getattr(item, "path", None) or getattr(item, "file", None)
        if isinstance(name, str) and name:
            found.append((PROFILE, name))
    seen: set[str] = set()
    return [(role, name) for role, name in found if not (name in seen or seen.add(name))]  # type: ignore[func-returns-value]


def resolve(folder: Path, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else folder / path


def numbers_digest(art: Artifact) -> str:
    """sha256 over the canonical JSON (sorted keys, no spaces) of the perf rows and the correctness checks."""
    numbers = {
        "perf": [row.model_dump(mode="json") for row in art.perf],
        "correctness": art.correctness.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(numbers, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def predicate_of(art: Artifact) -> dict:
    """The run predicate: strings, booleans and nulls only, so it reads back from protobuf's Struct as it went in."""
    machine = art.machine
    return {
        "verdict": art.verdict,
        "reasons": list(art.reasons),
        "ticket": art.key,
        "topic": art.topic,
        "target": {"name": art.target.name, "kind": art.target.kind} if art.target else None,
        "host": art.host,
        "machine": {
            "hostname": machine.hostname if machine else None,
            "machineId": machine.machine_id if machine else None,
            "bootId": machine.boot_id if machine else None,
            "dmiProduct": machine.dmi_product if machine else None,
            "sha256": machine_digest(machine),
        },
        "numbers": {"sha256": numbers_digest(art)},
        "startedOn": art.ts,
        "finishedOn": art.finished_ts,
        "signedBy": art.signed_by,
        "pluginVersion": art.plugin_version,
    }


def statement_of(art: Artifact, artifact_path: Path):
    """The validated in-toto Statement (the library's model) of the artifact stored at ``artifact_path``."""
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.statement import Statement

    folder = artifact_path.parent
    subjects = [
        ResourceDescriptor(
            name=artifact_path.name, digest={"sha256": sha256_file(artifact_path)}, annotations={"role": ARTIFACT}
        ).pb
    ]
    for role, name in listed_outputs(art):
        path = resolve(folder, name)
        if path.is_file():  # a missing output is no subject: check names it, as the artifact lists it
            subjects.append(
                ResourceDescriptor(name=name, digest={"sha256": sha256_file(path)}, annotations={"role": role}).pb
            )
    for repo in art.repos:
        if repo.sha:
            subjects.append(
                ResourceDescriptor(name=repo.path, digest={"gitCommit": repo.sha}, annotations={"role": COMMIT}).pb
            )
    statement = Statement(subjects, PREDICATE_TYPE, predicate_of(art))
    statement.validate()
    return statement


def statement_bytes(statement) -> bytes:
    from google.protobuf.json_format import MessageToDict

    return json.dumps(MessageToDict(statement.pb), sort_keys=True, separators=(",", ":")).encode()


def parse_statement(payload: bytes):
    """The library's Statement from an envelope's payload, validated; ValueError says why not."""
    from google.protobuf.json_format import ParseDict, ParseError
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    try:
        proto = ParseDict(json.loads(payload), statement_pb2.Statement())
    except (ValueError, ParseError) as exc:
        raise ValueError(f"not an in-toto Statement: {str(exc).splitlines()[0]}") from None
    statement = Statement.copy_from_pb(proto)
    statement.validate()
    return statement


def as_dict(message) -> dict:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message)
