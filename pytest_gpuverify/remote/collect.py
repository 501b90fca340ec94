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

from pytest_gpuverify.common.threads import Background

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
        stored = getattr(outcome, "stored_path", None)  # the name it was written under, once written
        for path in (stored or outcome.artifact_path, outcome.raw_path, outcome.junit_path):
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
    """The controller's side: each worker's files are taken into ``out_dir`` as that worker ends, while
    the other workers still run (so the session's end waits only for the last worker's)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.taken = 0
        self.problems: list[str] = []  # each a line naming the file (or the host, for a file left there)
        self._received: set[str] = set()  # worker ids: xdist reports an interrupted worker's end twice
        self._loading: Background[None] | None = None  # warm()'s
        self.local_paths: dict[
            tuple[str, str], Path
        ] = {}  # (worker, artifact's file name on its host) -> its copy here

    def warm(self) -> None:
        """Load what taking files in needs (merge, check, the artifact's validator) in a thread, once,
        while the workers run: the first worker's files are then taken in at once. Otherwise its
        end, on xdist's event loop, paid 0.3-0.4 s of CPU and held up the other workers' ends."""
        if self._loading is None:
            self._loading = Background(_load_merge, "gpuverify-collect-warm")

    def receive(self, host: str, worker: str, workeroutput: dict) -> None:
        """Stage what ``worker`` handed back, take it in, and forget the staging folder (once per worker)."""
        if worker in self._received:
            return
        self._received.add(worker)
        if self._loading is not None:
            self._loading.wait()  # not the same imports twice at once; a failure shows in merge itself
        self.problems += [f"{host}: {line}" for line in workeroutput.get(NOTES_KEY) or []]
        files = workeroutput.get(FILES_KEY) or []
        if not files:
            return
        from pytest_gpuverify.reporting.merge import merge

        staging = Path(tempfile.mkdtemp(prefix="gpuverify-collect-"))
        said: list[str] = []
        try:
            folder = staging / f"{host}-{worker}"  # merge's label of a second copy of a topic
            folder.mkdir()
            for name, content in files:
                if "/" not in name and name not in ("", ".", ".."):  # a name, never a path
                    (folder / name).write_bytes(content)
            taken: dict[Path, Path] = {}
            merge([folder], self.out_dir, keep_all=True, say=said.append, taken=taken)
            self.local_paths.update({(worker, source.name): local for source, local in taken.items()})
        except OSError as exc:  # the files stay on the host: `gpuverify merge` from there
            said.append(f"host {host}: the files of worker {worker} were not taken into {self.out_dir}: {exc}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.taken += sum(line.startswith("OK ") for line in said)
        self.problems += [line for line in said if not line.startswith("OK ")]

    def landed(self) -> tuple[int, list[str]]:
        """(artifacts taken, problems)."""
        return self.taken, list(self.problems)


def _load_merge() -> None:
    from pytest_gpuverify.records.artifact import Artifact
    from pytest_gpuverify.reporting import merge  # noqa: F401  (and gpuverify check, which it runs)

    Artifact.model_rebuild()  # its validator, deferred to first use (records/artifact.py)
