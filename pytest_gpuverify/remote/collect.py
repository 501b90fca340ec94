"""The artifacts of a session on GPU hosts, written on each host, land on the controller too.

Each worker, at its end, hands its written files (artifact, raw log, inner JUnit report, their
``.sig`` files) to the controller in xdist's ``workeroutput``; the controller stages them per worker
and takes them into its own result folder with ``gpuverify merge``'s function: each artifact must
pass ``gpuverify check`` before and after it is taken, nothing is overwritten, and a topic two hosts
both wrote keeps both (the later ``bench_<topic>.from-<host>.json``)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

FILES_KEY = "gpuverify_files"
NOTES_KEY = "gpuverify_files_left"
MAX_BYTES = 256 << 20  # per worker: a 100 MB raw output is copied; past this, `gpuverify merge` from the host


def outcome_files(outcomes) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(name, content) of every file the written outcomes made, and a line per file left on the host."""
    files: list[tuple[str, bytes]] = []
    left: list[str] = []
    total = 0
    for outcome in outcomes:
        if not outcome.written:
            continue
        for path in (outcome.artifact_path, outcome.raw_path, outcome.junit_path):
            for file in (path, path.with_name(path.name + ".sig")) if path is not None else ():
                if not file.is_file():
                    continue
                size = file.stat().st_size
                if total + size > MAX_BYTES:
                    left.append(f"{file} ({size} B) was left on the host: past {MAX_BYTES >> 20} MiB per worker")
                    continue
                files.append((file.name, file.read_bytes()))
                total += size
    return files, left


class ArtifactCollector:
    """The controller's side: stage what each worker handed back, then take it into ``out_dir``."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._staging = Path(tempfile.mkdtemp(prefix="gpuverify-collect-"))
        self.left: list[str] = []

    def receive(self, host: str, worker: str, workeroutput: dict) -> None:
        files = workeroutput.get(FILES_KEY) or []
        if not files:
            return
        folder = self._staging / f"{host}-{worker}"
        folder.mkdir(exist_ok=True)
        for name, content in files:
            if "/" not in name and name not in ("", ".", ".."):  # a name, never a path
                (folder / name).write_bytes(content)
        self.left += [f"{host}: {line}" for line in workeroutput.get(NOTES_KEY) or []]

    def land(self) -> tuple[int, list[str]]:
        """(artifacts taken, problems): each problem a line naming the file."""
        from pytest_gpuverify.reporting.merge import merge

        sources = sorted(p for p in self._staging.iterdir() if p.is_dir())
        said: list[str] = []
        if sources:
            merge(sources, self.out_dir, keep_all=True, say=said.append)
        shutil.rmtree(self._staging, ignore_errors=True)
        problems = [line for line in said if not line.startswith("OK ")]
        return sum(line.startswith("OK ") for line in said), problems + self.left
