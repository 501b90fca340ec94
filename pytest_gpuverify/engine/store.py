"""Storing an artifact where other sessions and users write too: the tickets folder's lock, earlier
artifacts of the topic moved aside, a concurrent session's artifact left where it is, and a copy in
the user's own folder when the asked place cannot take it.

The folder lock (``<tickets>/.gpuverify.lock``, a kernel ``flock`` every session and xdist worker
writing into the folder takes) is held only while files are moved: the artifact is written to a
staged file first. A holder that keeps it longer than :data:`MOVES_LOCK_WAIT_S` (another user's
stuck shell, a stopped session) costs a line naming it and a note in the artifact, never the result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pytest_gpuverify.attest.statement import attestation_path
from pytest_gpuverify.common.files import RESULT_MODE, FileProblem, private_folder, stage_file, unwritable, write_atomic
from pytest_gpuverify.records.artifact import Artifact, dump_artifact


class WrittenBeside(FileProblem):
    """Another member's artifact holds the name and cannot be moved aside: this one is at ``path``."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


MOVES_LOCK_WAIT_S = 10.0  # past this, the artifact is written without the folder lock
MOVES_LOCK_TELL_S = 1.0  # a wait longer than this shows a line naming the lock's holder


def store_artifact(
    artifact: Artifact,
    path: Path,
    lock_path: Path | None,
    on_wait: Callable[[str], None] | None = None,
    wait_s: float = MOVES_LOCK_WAIT_S,
) -> Path:
    """Write ``artifact`` as ``path`` and return the name it really has. An earlier artifact of the
    topic is moved aside; one written while this run went on (a concurrent session of the same
    topic) keeps its name, and this one takes a free name beside it, so the name each session
    prints holds its own run. Both are decided under ``lock_path``, so two writers never pick the
    same name for what they move aside, nor move each other's new artifact away."""
    began = _began(artifact)
    staged = stage_file(path, dump_artifact(artifact), RESULT_MODE)
    try:
        lease = take_moves_lock(lock_path, artifact, on_wait, wait_s) if lock_path is not None else None
        if lease is None and artifact.notes and lock_path is not None:
            staged = _restage(staged, path, artifact)  # the note about the lock is part of the artifact
        try:
            final = path
            if _written_since(path, began):
                final = _free_name(path, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
            else:
                try:
                    keep_previous(path)
                except FileProblem as exc:  # another member's artifact holds the name: ours goes beside it
                    final = _free_name(path, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
                    os.replace(staged, final)
                    raise WrittenBeside(f"{exc}; this run's artifact is {final}", final) from None
            os.replace(staged, final)
            return final
        finally:
            if lease is not None:
                lease.release()
    finally:
        if staged.exists():
            staged.unlink()


def take_moves_lock(lock_path: Path, artifact: Artifact, on_wait: Callable[[str], None] | None, wait_s: float):
    """The folder lock within ``wait_s`` (a held :class:`GpuLease` of the file), else None and a note
    in ``artifact`` naming the holder; a wait past :data:`MOVES_LOCK_TELL_S` shows ``on_wait`` a line."""
    from pytest_gpuverify.lease.lock import GpuLease, holder_of

    lease = GpuLease(lock_path, gpu_index=-1)
    start, told = time.monotonic(), False
    try:
        while not lease.try_acquire():
            waited = time.monotonic() - start
            if waited >= wait_s:
                artifact.notes.append(
                    f"written without the folder lock {lock_path}: held by {holder_of(lock_path)} "
                    f"for more than {wait_s:g} s"
                )
                return None
            if on_wait is not None and not told and waited >= MOVES_LOCK_TELL_S:
                told = True
                on_wait(
                    f"waiting for the folder lock {lock_path} to store the artifact (at most {wait_s:g} s): "
                    f"held by {holder_of(lock_path)}"
                )
            time.sleep(0.05)
    except OSError as exc:  # an unusable lock file never costs the result: written unlocked
        artifact.notes.append(f"written without the folder lock {lock_path}: {exc}")
        return None
    finally:
        if told and on_wait is not None:
            on_wait("")
    return lease


def store_or_keep_elsewhere(
    artifact: Artifact, path: Path, lock_path: Path | None, on_wait: Callable[[str], None] | None = None
) -> tuple[Path, str | None]:
    """:func:`store_artifact`; when the asked place cannot take it (a full disk, a folder turned
    read-only), a copy in the user's own folder. Returns (where the artifact is, the problem: None
    when it is where it was asked to be). Raises only when neither place took it."""
    try:
        return store_artifact(artifact, path, lock_path, on_wait), None
    except WrittenBeside as exc:  # in the asked folder, beside another member's artifact
        return exc.path, str(exc)
    except FileProblem as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"cannot write {path}: {exc.strerror or exc}"
    kept = private_folder().path / "artifacts" / path.parent.name / path.name
    kept = _free_name(kept, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")) if kept.exists() else kept
    artifact.notes.append(f"not written to {path} ({problem}): kept at {kept}")
    try:
        write_atomic(kept, dump_artifact(artifact), mode=RESULT_MODE)
    except OSError as exc:
        raise FileProblem(f"{problem}; nor in {kept.parent}: {exc}") from None
    return kept, f"the artifact could not be written to {path} ({problem}); it was written to {kept} instead"


def keep_previous(path: Path) -> None:
    """An earlier artifact of the same topic is evidence too: move it aside, never overwrite it."""
    if not path.exists():
        return
    stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = _free_name(path, stamp)
    try:
        os.replace(path, aside)
    except PermissionError as exc:  # a sticky folder and another member's artifact
        raise unwritable(
            path,
            f"cannot move it aside to {aside.name}: {exc.strerror}",
            "its owner removes or renames it, or use another ticket",
        ) from exc
    signature = path.with_name(path.name + ".sig")
    if signature.exists():  # a signature belongs to its artifact
        os.replace(signature, aside.with_name(aside.name + ".sig"))
    attestation = attestation_path(path)
    if attestation.exists():  # and so does its attestation
        os.replace(attestation, attestation_path(aside))


def store_attestation(artifact: Artifact, stored: Path, ssh_key: Path | None, key_file: Path | None) -> list[str]:
    """``bench_<topic>.intoto.jsonl`` beside the stored artifact, once every file it names is final;
    its problems, one line each (the artifact is already written: never lost to them)."""
    from pytest_gpuverify.attest.write import write_attestation

    return write_attestation(artifact, stored, ssh_key, key_file)


def _free_name(path: Path, stamp: str) -> Path:
    aside = path.with_name(f"{path.stem}.{stamp}.json")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.stem}.{stamp}-{n}.json")
    return aside


def _began(artifact: Artifact) -> float | None:
    """When the artifact's run began (its ``ts``), in epoch seconds; None when not a time."""
    try:
        return datetime.fromisoformat((artifact.ts or "").replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _written_since(path: Path, began: float | None) -> bool:
    """An artifact at ``path`` written after this run began: a concurrent session's, not an earlier run's."""
    if began is None:
        return False
    try:
        return os.stat(path).st_mtime >= began
    except OSError:
        return False


def _restage(staged: Path, path: Path, artifact: Artifact) -> Path:
    staged.unlink()
    return stage_file(path, dump_artifact(artifact), RESULT_MODE)
