"""The env file's Signing table: who signs a session's artifacts, with which key."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class SigningRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    signer: str  # a user name or a Hosts row's host; the principal of the allowed-signers file
    key: Path | None = None  # the private key
    row: int = 0  # the row's number in the table, for errors found later (a key that is missing)


def signing_row(where, cells: dict[str, str | None]) -> SigningRow:
    """One row of the Signing table, checked; ``where`` is envfile's row locator."""
    signer, key = cells["signer"], cells["key"]
    if signer is None or any(c.isspace() or c in ',"*?!' for c in signer):
        raise where.error(
            f"signer {signer!r} is not one name",
            "write the user or host name alone, "
            "as the allowed-signers file names it (no spaces, commas, quotes or wildcards).",
        )
    path = Path(key).expanduser() if key else None
    if path is not None and not path.is_absolute():
        raise where.error(
            f"key {key!r} is not an absolute path", "write the private key's full path, e.g. /home/dev/.ssh/id_ed25519."
        )
    return SigningRow(signer=signer, key=path, row=where.row)
