"""The reviewer's policy for ``gpuverify check --policy FILE`` (TOML): who may sign, which predicate
types are accepted, which subjects must be there, and optionally the GitHub workflow whose keyless
attestation (``actions/attest``) must cover the artifact.

    predicate_types = ["https://github.com/pytest-gpuverify/pytest-gpuverify/run/v1"]
    required_subjects = ["artifact", "raw_output"]

    [signers]
    allowed_signers = "allowed_signers"   # OpenSSH allowed-signers file (SSH signatures)
    public_keys = ["keys/ci.pub"]         # ed25519/ECDSA public keys, PEM or OpenSSH .pub
    require = true                        # default: true when any signer is named

    [github]
    workflow = "org/repo/.github/workflows/gpu.yml"   # checked with `gh attestation verify`

Relative paths are read from the policy file's folder."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_gpuverify.attest.statement import PREDICATE_TYPE

Role = Literal["artifact", "raw_output", "junit", "profile", "commit"]
REQUIRED: tuple[Role, ...] = ("artifact", "raw_output")


class PolicyError(ValueError):
    """A policy file that cannot be used: the message names the file, the key and the fix."""


class Signers(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_signers: Path | None = None
    public_keys: list[Path] = Field(default_factory=list)
    require: bool | None = None


class GitHub(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow: str
    repo: str | None = None  # owner/name; default: the workflow's first two parts


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    predicate_types: list[str] = Field(default_factory=lambda: [PREDICATE_TYPE], min_length=1)
    required_subjects: list[Role] = Field(default_factory=lambda: list(REQUIRED))
    signers: Signers = Field(default_factory=Signers)
    github: GitHub | None = None
    path: Path = Path("policy.toml")
    sha256: str = ""

    @property
    def signature_required(self) -> bool:
        named = self.signers.allowed_signers is not None or bool(self.signers.public_keys)
        return named if self.signers.require is None else self.signers.require

    def public_keys(self) -> dict[str, object]:
        """The policy's public keys by fingerprint; PolicyError names an unreadable one."""
        from pytest_gpuverify.attest.dsse import load_public_key, public_fingerprint

        keys: dict[str, object] = {}
        for path in self.signers.public_keys:
            try:
                key = load_public_key(path)
            except (OSError, ValueError) as exc:
                raise PolicyError(
                    f"{self.path}: signers.public_keys: {exc}; give a PEM or OpenSSH public key"
                ) from None
            keys[public_fingerprint(key)] = key
        return keys


def load_policy(path: Path) -> Policy:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"--policy {path}: {exc.strerror or exc}; give a TOML policy file") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{path}: not TOML ({exc}); fix the line it names") from None
    try:
        policy = Policy.model_validate({**raw, "path": path, "sha256": hashlib.sha256(data).hexdigest()})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise PolicyError(f"{path}: {where}: {err['msg']}; see the policy keys in docs/verify-a-result.md") from None
    folder = path.parent
    signers = policy.signers
    allowed = signers.allowed_signers
    if allowed is not None and not allowed.is_absolute():
        allowed = folder / allowed
    if allowed is not None and not allowed.is_file():
        raise PolicyError(f"{path}: signers.allowed_signers {allowed}: no such file; correct the path")
    keys = [k if k.is_absolute() else folder / k for k in signers.public_keys]
    return policy.model_copy(
        update={"signers": Signers(allowed_signers=allowed, public_keys=keys, require=signers.require)}
    )
