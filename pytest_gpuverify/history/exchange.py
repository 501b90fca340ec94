"""Export and import as JSON lines: one :class:`StoredRun` a line, for moving history between hosts or
CI runs. Import trusts no line: each run's artifact is found (its recorded path, else its ticket folder
beside the export or under an ``--artifacts`` folder) and verified as ``history add`` verifies it (the
check, its signatures with an allowed-signers file); its sha256 and every field the artifact gives must be
the line's (the line adds only its branch and who sent it; a signer is kept only where verified here). One run per artifact sha256, as
adding keeps; a line that is not a record, or whose run is refused, is named (file and line) and skipped,
the others are imported."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from pydantic import ValidationError
from sqlalchemy import Connection

from pytest_gpuverify.history.records import StoredRun
from pytest_gpuverify.history.store import insert_many, runs


def export_lines(conn: Connection, out: IO[str], target: str | None = None) -> int:
    found = runs(conn, target=target)
    for run in found:
        out.write(run.model_dump_json() + "\n")
    return len(found)


CHUNK = 500  # runs a transaction: writers at once wait for each other per chunk, not per run


def artifact_of(run: StoredRun, export: Path, folders: list[Path]) -> Path | None:
    """Where the run's artifact is here: its recorded path, else its ticket folder and name beside the export
    or in one of ``folders``."""
    recorded = Path(run.artifact_path)
    tail = Path(*recorded.parts[-2:]) if len(recorded.parts) >= 2 else Path(recorded.name)
    for candidate in [recorded, *(folder / tail for folder in [export.parent, *folders])]:
        if _readable(candidate):
            return candidate
    return None


def _readable(path: Path) -> bool:
    """A file this user can read (another user's private folder is neither: stat itself is refused there)."""
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a folder this user may not enter: something is there
        return True


def verified(run: StoredRun, export: Path, folders: list[Path], allowed: Path | None) -> StoredRun | str:
    """The run as its artifact says it (the line's branch and sender kept), or why it is refused."""
    from pytest_gpuverify.history.add import verified_run

    found = artifact_of(run, export, folders)
    if found is None:
        where = "cannot be read by this user" if _exists(Path(run.artifact_path)) else "is not here"
        return (
            f"its artifact {run.artifact_path} {where}. Fix: put its ticket folder beside the export, or name "
            "the folder that holds it with --artifacts DIR"
        )
    made = verified_run(found, run.ref, allowed)
    if isinstance(made, str):
        return f"{found}: {made}"
    if made.artifact_sha256 != run.artifact_sha256:
        return f"{found} has sha256 {made.artifact_sha256[:12]}, the line says {run.artifact_sha256[:12]}: another artifact"
    keep = {k: getattr(run, k) for k in ("artifact_path", "ref", "ci_run_url", "runner", "uploaded")}
    made = made.model_copy(update=keep)
    told, says = run.model_dump(exclude={"signer"}), made.model_dump(exclude={"signer"})
    wrong = [k for k in says if told[k] != says[k]]
    if wrong:
        return f"the line's {', '.join(wrong)} differ(s) from what its artifact {found} says. Fix: export it again"
    return made


def import_lines(
    conn: Connection, path: Path, folders: list[Path] | None = None, allowed: Path | None = None
) -> tuple[int, int, list[str]]:
    """(runs added, runs already stored, one problem per line not imported)."""
    found: list[StoredRun] = []
    problems = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                run = StoredRun.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(map(str, first["loc"])) or "the line"
                problems.append(
                    f"{path} line {number}: not a history record ({where}: {first['msg']}); "
                    "skipped. Fix: export it again with gpuverify history export"
                )
                continue
            made = verified(run, path, folders or [], allowed)
            if isinstance(made, str):
                problems.append(f"{path} line {number}: refused: {made}")
                continue
            found.append(made)
    added = sum(insert_many(conn, found[i : i + CHUNK]) for i in range(0, len(found), CHUNK))
    return added, len(found) - added, problems
