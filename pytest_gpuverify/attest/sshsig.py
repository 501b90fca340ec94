"""OpenSSH signatures made in this process: the SSHSIG text ``ssh-keygen -Y sign`` writes, from an
unencrypted ed25519 or ECDSA key read with ``cryptography``. A run signs each file it wrote and its
attestation; an ssh-keygen process costs ~30 ms each, this well under 1 ms. Keys it cannot read (a
passphrase, RSA, a hardware token) are the callers' to hand to ssh-keygen."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

SSH_ARMOR = b"-----BEGIN SSH SIGNATURE-----"


def load_private_key(path: Path):
    """An ed25519 or ECDSA private key from a PEM (PKCS#8, SEC1) or OpenSSH file, unencrypted."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_ssh_private_key

    data = path.read_bytes()
    try:
        key = load_ssh_private_key(data, None) if b"OPENSSH PRIVATE KEY" in data else load_pem_private_key(data, None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not an unencrypted PEM or OpenSSH private key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: a {type(key).__name__}; use an ed25519 or ECDSA key (`ssh-keygen -t ed25519`)")
    return key


def ecdsa_hash(curve):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    size = curve.key_size
    return ec.ECDSA(hashes.SHA256() if size <= 256 else hashes.SHA384() if size <= 384 else hashes.SHA512())


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _ssh_mpint(value: int) -> bytes:
    raw = value.to_bytes(value.bit_length() // 8 + 1, "big")  # a leading zero keeps it positive
    return _ssh_string(raw)


def sshsig(key, message_sha512: bytes, namespace: str) -> bytes:
    """The armored SSHSIG of a message (given by its SHA-512) that ``ssh-keygen -Y sign -n NAMESPACE``
    makes (OpenSSH's PROTOCOL.sshsig: the key signs the magic, the namespace and the message's hash)."""
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    kind, blob64 = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).split()[:2]
    fields = _ssh_string(namespace.encode()) + _ssh_string(b"") + _ssh_string(b"sha512")
    signed = b"SSHSIG" + fields + _ssh_string(message_sha512)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        raw = key.sign(signed)
    else:
        r, s = decode_dss_signature(key.sign(signed, ecdsa_hash(key.curve)))
        raw = _ssh_mpint(r) + _ssh_mpint(s)
    sig = _ssh_string(kind) + _ssh_string(raw)
    body = b"SSHSIG" + (1).to_bytes(4, "big") + _ssh_string(base64.b64decode(blob64)) + fields + _ssh_string(sig)
    text = base64.b64encode(body)
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return b"\n".join([SSH_ARMOR, *lines, b"-----END SSH SIGNATURE-----"]) + b"\n"


def sha512_of_file(path: Path) -> bytes:
    digest = hashlib.sha512()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.digest()
