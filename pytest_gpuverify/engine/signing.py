"""Signed artifacts: OpenSSH signatures (``ssh-keygen -Y sign``, namespace ``gpuverify``) over each file
a run writes, made once the file is final, and checked with ``ssh-keygen -Y verify`` against an
allowed-signers file. No crypto of our own: ssh-keygen does all of it.

The env file's optional ``## Signing`` table names the private key per signer: a user name (the
person running pytest) or a Hosts row's host (a CI machine's key). The user's row wins. The signer's
name is recorded in the artifact (``signed_by``); it is the principal the allowed-signers file must
list with the matching public key.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gpuverify.config.signing import SigningRow

if TYPE_CHECKING:
    from pytest_gpuverify.config.envfile import EnvFile

NAMESPACE = "gpuverify"
TIMEOUT_S = 30
ROW_FIX = "write `| signer | key |`: a user or host name, and the absolute path of its private key."


def signer_for(env: EnvFile, host: str, user: str | None = None) -> SigningRow | None:
    """The row that signs this session's artifacts (the user's, else the host's), its key checked
    readable now, before any GPU is touched; None without a Signing table or a matching row."""
    from pytest_gpuverify.config.envfile import EnvFileError

    user = user or _user()
    rows = {r.signer.casefold(): r for r in env.signing}
    row = rows.get(user.casefold()) or rows.get(host.casefold())
    if row is None:
        return None
    if row.key is None:
        raise EnvFileError(
            env.path,
            "the key cell is empty",
            "write the private key's path, or delete the row.",
            section="Signing",
            row=row.row,
            row_label=row.signer,
        )
    if not os.access(row.key, os.R_OK) or not row.key.is_file():
        raise EnvFileError(
            env.path,
            f"key {row.key} is not a readable file",
            f"create it (`ssh-keygen -t ed25519 -f {row.key}`), or correct the path.",
            section="Signing",
            row=row.row,
            row_label=row.signer,
        )
    return row


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid without a passwd entry (some containers)
        return str(os.getuid())


def sign(path: Path, key: Path) -> str | None:
    """Write ``path``.sig; None, or why it could not be signed. An unencrypted ed25519 or ECDSA key signs
    in this process, any other key through ``ssh-keygen -Y sign``: the same SSHSIG text either way."""
    from pytest_gpuverify.attest.sshsig import load_private_key, sha512_of_file, sshsig
    from pytest_gpuverify.common.files import write_atomic

    signature = signature_of(path)
    signature.unlink(missing_ok=True)  # ssh-keygen asks before it overwrites one
    try:
        private = load_private_key(key)
    except (OSError, ValueError):
        return _ssh_keygen(["-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(path)], stdin=None)
    try:
        write_atomic(signature, sshsig(private, sha512_of_file(path), NAMESPACE), sync=False)
    except OSError as exc:
        return f"{signature}: {exc.strerror or exc}"
    return None


def verify(path: Path, allowed_signers: Path, identity: str) -> str | None:
    """None when ``path``.sig is ``identity``'s signature of ``path`` as it is now; else why not."""
    signature = signature_of(path)
    if not signature.exists():
        return f"{path.name} is not signed (no {signature.name})"
    with open(path, "rb") as data:
        why = _ssh_keygen(
            ["-Y", "verify", "-f", str(allowed_signers), "-I", identity, "-n", NAMESPACE, "-s", str(signature)],
            stdin=data,
        )
    return f"{path.name}: the signature does not verify as {identity}: {why}" if why else None


def signer_of(path: Path, allowed_signers: Path) -> str | None:
    """The principal of ``allowed_signers`` whose key made ``path``.sig (``ssh-keygen -Y find-principals``)."""
    signature = signature_of(path)
    if not signature.exists():
        return None
    try:
        res = subprocess.run(
            ["ssh-keygen", "-Y", "find-principals", "-f", str(allowed_signers), "-n", NAMESPACE, "-s", str(signature)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = res.stdout.decode("utf-8", errors="replace").split()
    return found[0] if res.returncode == 0 and found else None


def signature_of(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


def _ssh_keygen(args: list[str], stdin) -> str | None:
    try:
        # a session of its own: no terminal, so a key with a passphrase fails at once, never prompts
        res = subprocess.run(
            ["ssh-keygen", *args],
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            start_new_session=True,
        )
    except FileNotFoundError:
        return "ssh-keygen is not installed (apt-get install openssh-client)"
    except subprocess.TimeoutExpired:
        return f"ssh-keygen did not answer in {TIMEOUT_S} s"
    if res.returncode == 0:
        return None
    text = (res.stderr or res.stdout).decode("utf-8", errors="replace").strip().splitlines()
    return text[-1] if text else f"ssh-keygen exited {res.returncode}"


def sign_outputs(row: SigningRow, paths: list[Path | None]) -> None:
    """Sign each file a run wrote. A failure is said on stderr and leaves the file unsigned, which
    ``gpuverify check --allowed-signers`` reports; the artifact itself is never lost to it."""
    import sys

    for path in paths:
        if path is None or not path.exists() or row.key is None:
            continue
        why = sign(path, row.key)
        if why:
            sys.stderr.write(f"gpuverify: {path}: not signed ({why})\n")
