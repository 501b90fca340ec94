"""Adding artifacts to the store: each is ``gpuverify check``ed first (compare.command.checked: the
same checks, so a tampered artifact is refused with the check's reason), its signatures verified where an
allowed-signers file is given, then stored by its sha256. ``history import`` verifies each run alike."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection

from pytest_gpuverify.compare.command import Refused, checked
from pytest_gpuverify.history.records import StoredRun, commit_of, stored_run
from pytest_gpuverify.history.store import insert
from pytest_gpuverify.place.gitstate import git
from pytest_gpuverify.records.artifact import Artifact, sha256_file

ADDED, KNOWN, REFUSED = "added", "already stored", "refused"


@dataclass(frozen=True)
class Added:
    path: Path
    outcome: str  # ADDED, KNOWN or REFUSED
    why: str = ""

    def line(self) -> str:
        return f"{self.path}: {self.outcome}" + (f": {self.why}" if self.why else "")


def artifact_files(paths: Iterable[Path]) -> list[Path]:
    """Each folder's artifacts (bench_*.json), each file as given."""
    found: list[Path] = []
    for path in paths:
        found += sorted(path.glob("bench_*.json")) if path.is_dir() else [path]
    return found


def branch_of(art: Artifact) -> str | None:
    """The branch checked out in the artifact's repo when its commit is on it; None when unknown
    (no checkout here, a detached HEAD, a commit not on the branch)."""
    sha, _ = commit_of(art)
    repo = next((r for r in art.repos if r.sha == sha), None) if sha else None
    if repo is None or not Path(repo.path).is_dir():
        return None
    branch = (git(Path(repo.path), "symbolic-ref", "--short", "-q", "HEAD") or "").strip()
    if not branch or git(Path(repo.path), "merge-base", "--is-ancestor", sha or "", "HEAD") is None:
        return None
    return branch


def verified_run(path: Path, ref: str | None = None, allowed: Path | None = None) -> StoredRun | str:
    """The run the artifact at ``path`` is, after ``gpuverify check``'s checks and, with ``allowed`` (an
    allowed-signers file), its signatures' (its signer then recorded); else why it is refused, one line."""
    from pytest_gpuverify.verify.check import signature_problems

    try:
        art = checked(str(path))
    except Refused as exc:
        return str(exc).removeprefix(f"{path}: ")
    signer = None
    if allowed is not None:
        problems = signature_problems(art, path, allowed)
        if problems:
            return f"{problems[0]} (allowed signers: {allowed})"
        signer = art.signed_by
    digest = sha256_file(path)  # read after the check: a file changed since is refused next time
    run = stored_run(art, path.resolve(), digest, ref or branch_of(art))
    return run.model_copy(update={"signer": signer}) if signer else run


def add_file(conn: Connection, path: Path, ref: str | None = None, allowed: Path | None = None) -> Added:
    run = verified_run(path, ref, allowed)
    if isinstance(run, str):
        return Added(path, REFUSED, run)
    return Added(path, ADDED if insert(conn, run) else KNOWN)


def add_files(
    conn: Connection, paths: Iterable[Path], ref: str | None = None, allowed: Path | None = None
) -> list[Added]:
    return [add_file(conn, p, ref, allowed) for p in artifact_files(paths)]
