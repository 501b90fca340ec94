"""DSSE envelopes (https://github.com/secure-systems-lab/dsse): a payload, its type, and signatures over
the pre-authentication encoding (PAE) of both. Two kinds of signature: an OpenSSH one (``ssh-keygen -Y
sign`` over the PAE bytes, the armored SSHSIG text as ``sig``) for the keys the env file's Signing table
names, and a raw ed25519/ECDSA one through ``cryptography`` for a key file. Either way ``keyid`` is the
public key's OpenSSH fingerprint (``SHA256:...``, as ``ssh-keygen -l`` prints it)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.attest.sshsig import SSH_ARMOR, ecdsa_hash, load_private_key, sshsig

# its own namespace: an SSH signature made for a DSSE envelope can never pass as a file's .sig, nor back
NAMESPACE = "gpuverify-dsse"
TIMEOUT_S = 30


class Signature(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keyid: str = ""
    sig: str


class Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    payload: str  # base64 of the statement's bytes
    payload_type: str = Field(alias="payloadType")
    signatures: list[Signature] = Field(default_factory=list)

    def payload_bytes(self) -> bytes:
        return base64.b64decode(self.payload, validate=True)

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload_bytes())

    def line(self) -> str:
        return self.model_dump_json(by_alias=True)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what every signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def envelope(payload_type: str, payload: bytes) -> Envelope:
    return Envelope.model_validate({"payload": base64.b64encode(payload).decode(), "payloadType": payload_type})


# -- keys -----------------------------------------------------------------------------------------


def fingerprint(blob: bytes) -> str:
    """OpenSSH's fingerprint of a public key's wire-format blob."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def public_fingerprint(public) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    line = public.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).split()
    return fingerprint(base64.b64decode(line[1]))


def load_public_key(path: Path):
    """An ed25519 or ECDSA public key from a PEM file or an OpenSSH ``.pub`` line."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from cryptography.hazmat.primitives.serialization import load_pem_public_key, load_ssh_public_key

    data = path.read_bytes().strip()
    try:
        key = load_pem_public_key(data) if data.startswith(b"-----BEGIN") else load_ssh_public_key(data)
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: not a PEM or OpenSSH public key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey):
        raise ValueError(f"{path}: a {type(key).__name__}; use an ed25519 or ECDSA key")
    return key


# -- signing --------------------------------------------------------------------------------------


def sign_with_key(env: Envelope, key_path: Path) -> None:
    """Add a raw ed25519/ECDSA signature made with the key file; ValueError names a bad key."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = load_private_key(key_path)
    data = env.pae()
    raw = key.sign(data) if isinstance(key, ed25519.Ed25519PrivateKey) else key.sign(data, ecdsa_hash(key.curve))
    env.signatures.append(Signature(keyid=public_fingerprint(key.public_key()), sig=base64.b64encode(raw).decode()))


def sign_with_ssh(env: Envelope, key_path: Path) -> str | None:
    """Add an OpenSSH signature of the PAE bytes; None, or why it could not. An unencrypted ed25519 or
    ECDSA key signs in this process (an ssh-keygen process costs ~30 ms an artifact); any other key
    (a passphrase, RSA, a hardware token) through ``ssh-keygen -Y sign``. Both give the same SSHSIG text."""
    try:
        armored = sshsig(load_private_key(key_path), hashlib.sha512(env.pae()).digest(), NAMESPACE)
    except (OSError, ValueError):
        armored, why = _ssh_keygen(["-Y", "sign", "-f", str(key_path), "-n", NAMESPACE], env.pae())
        if why:
            return why
    env.signatures.append(Signature(keyid=_sshsig_keyid(armored), sig=base64.b64encode(armored).decode()))
    return None


def _sshsig_keyid(armored: bytes) -> str:
    """The fingerprint of the public key an SSHSIG blob carries (magic, version, then the key)."""
    body = b"".join(line for line in armored.splitlines() if line and not line.startswith(b"-----"))
    blob = base64.b64decode(body)
    if not blob.startswith(b"SSHSIG"):
        return ""
    size = int.from_bytes(blob[10:14], "big")
    return fingerprint(blob[14 : 14 + size])


def _ssh_keygen(args: list[str], data: bytes) -> tuple[bytes, str | None]:
    try:
        # a session of its own: no terminal, so a key with a passphrase fails at once, never prompts
        res = subprocess.run(
            ["ssh-keygen", *args], input=data, capture_output=True, timeout=TIMEOUT_S, start_new_session=True
        )
    except FileNotFoundError:
        return b"", "ssh-keygen is not installed (apt-get install openssh-client)"
    except subprocess.TimeoutExpired:
        return b"", f"ssh-keygen did not answer in {TIMEOUT_S} s"
    if res.returncode == 0:
        return res.stdout, None
    text = (res.stderr or res.stdout).decode("utf-8", errors="replace").strip().splitlines()
    return b"", text[-1] if text else f"ssh-keygen exited {res.returncode}"


# -- verifying ------------------------------------------------------------------------------------


def verify_signature(env: Envelope, sig: Signature, keys: dict[str, object], allowed_signers: Path | None):
    """(who signed, None) when ``sig`` verifies over the envelope as it is now; (None, why not) else.
    ``keys``: public keys by fingerprint; ``allowed_signers``: the OpenSSH file SSH signatures are held to."""
    try:
        raw = base64.b64decode(sig.sig, validate=True)
        data = env.pae()
    except ValueError:
        return None, "is not base64"
    if raw.startswith(SSH_ARMOR):
        return _verify_ssh(raw, data, allowed_signers)
    key = keys.get(sig.keyid)
    if key is None:
        return None, f"keyid {sig.keyid or '(none)'} is none of the policy's public_keys"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(raw, data)
        else:
            key.verify(raw, data, ecdsa_hash(key.curve))  # type: ignore[attr-defined]
    except InvalidSignature:
        return None, f"does not verify with key {sig.keyid}"
    return sig.keyid, None


def _verify_ssh(armored: bytes, data: bytes, allowed_signers: Path | None):
    if allowed_signers is None:
        return None, "is an SSH signature, and the policy names no allowed_signers file"
    with tempfile.TemporaryDirectory(prefix="gpuverify-dsse-") as tmp:
        sig_file = Path(tmp) / "sig"
        sig_file.write_bytes(armored)
        found, why = _ssh_keygen(
            ["-Y", "find-principals", "-f", str(allowed_signers), "-n", NAMESPACE, "-s", str(sig_file)], b""
        )
        principal = found.decode("utf-8", errors="replace").split()
        if why or not principal:
            return None, f"was made by no key of {allowed_signers}"
        _, why = _ssh_keygen(
            ["-Y", "verify", "-f", str(allowed_signers), "-I", principal[0], "-n", NAMESPACE, "-s", str(sig_file)],
            data,
        )
    return (None, f"does not verify as {principal[0]}: {why}") if why else (principal[0], None)
