"""Export and import as JSON lines: one :class:`StoredRun` a line, for moving history between hosts or
CI runs. Import keeps one run per artifact sha256, as adding does; a line that is not a record is
named (file and line) and skipped, the others are imported."""

from __future__ import annotations

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


def import_lines(conn: Connection, path: Path) -> tuple[int, int, list[str]]:
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
            found.append(run)
    added = sum(insert_many(conn, found[i : i + CHUNK]) for i in range(0, len(found), CHUNK))
    return added, len(found) - added, problems
