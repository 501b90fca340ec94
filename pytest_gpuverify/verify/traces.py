"""The artifact's traces and profiles (``profiles[]``): each stored file hashed as recorded, and the
trace's rule re-derived from the stored trace and the re-parsed rows (trace/corroborate.py), which must
give the run record's ``trace_doubts``."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import Artifact, sha256_file
from pytest_gpuverify.trace.corroborate import corroborate_profile


def profile_problems(art: Artifact, folder: Path, parsed: ParsedOutput | None) -> list[str]:
    problems = []
    for record in art.profiles:
        if not record.path:
            continue
        path = folder / record.path
        if Path(record.path).name != record.path:
            problems.append(f"profiles: {record.path!r} is not a file name beside the artifact")
            continue
        if not path.is_file():
            problems.append(f"{record.purpose} {path} is missing")
            continue
        digest = sha256_file(path)
        if digest != record.sha256:
            problems.append(f"{record.purpose} {record.path} sha256 is {digest}, the artifact says {record.sha256}")
        elif record.bytes is not None and path.stat().st_size != record.bytes:
            problems.append(
                f"{record.purpose} {record.path} is {path.stat().st_size} bytes, the artifact says {record.bytes}"
            )
    if art.run is None:
        return problems
    doubts: list[str] = []
    for record in art.profiles:
        if record.purpose == "trace":
            doubts = corroborate_profile(record, folder, parsed.perf if parsed is not None else []).doubts
    if doubts != art.run.trace_doubts:
        problems.append(
            f"run.trace_doubts say {art.run.trace_doubts!r}, the stored trace and the raw output give {doubts!r}"
        )
    return problems
