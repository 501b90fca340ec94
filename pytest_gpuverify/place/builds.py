"""Build steps: a kernel repo's extensions are built before its tests run (aiter's ``make hip_kernels
c_extensions``, in the same container). A declaration names them once::

    [[builds]]
    name = "kernels"                              # optional; default: the command's first word
    command = "make hip_kernels c_extensions"     # a string (split like a shell) or a list
    gpu = false                                   # true: it runs under a GPU's lock, that GPU visible
    workdir = "."                                 # relative to the worktree (optional)

Each runs once per session and worktree (so once per side of an A/B), in the target's container, in
the worktree, before the first target of that declaration; ``gpu = true`` ones only while holding a
GPU lock. Its output is kept beside the raw logs (``build_<name>.<time>.log``) and its command, exit
code and output sha256 go into every artifact of the targets that depend on it (``builds``). A
failed build makes those targets INCONCLUSIVE, and they never run. ``gpuverify check`` holds the
records to the kept files and to the verdict (:func:`build_problems`).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_gpuverify.config.builds import BuildStep
from pytest_gpuverify.execute.base import Executor
from pytest_gpuverify.records.builds import BuildRecord, build_failure, failed_prefix


def declared_builds(location: Path | None, wt_host: Path) -> tuple[Path | None, tuple[BuildStep, ...]]:
    """The builds of the declaration file that governs ``location`` inside the worktree."""
    from pytest_gpuverify.config.declarations import find_declarations, load_declarations

    path = find_declarations(location or wt_host, wt_host)
    if path is None:
        return None, ()
    return path, load_declarations(path).builds


class SessionBuilds:
    """Which builds ran in this session, per (declaration file, worktree): each runs once."""

    def __init__(self, out_dir: Path, timeout_s: float) -> None:
        self.out_dir, self.timeout_s = out_dir, timeout_s
        self.done: dict[tuple[str, str], list[BuildRecord]] = {}

    def run(
        self,
        key: tuple[str, str],
        steps: tuple[BuildStep, ...],
        handle: Executor,
        wt: str,
        env: dict[str, str],
        stamp: str,
        gpu: Callable[[dict], Any],
        side: str | None = None,
    ) -> list[BuildRecord]:
        """``gpu(hold)``: a context manager holding a GPU lock, yielding (indices, visible-devices env, the
        guard's on_start for the build's exec), that fills ``hold`` with its own lock's times as it
        ends; ``side``: the A/B side whose worktree ``wt`` is."""
        if key in self.done:
            return self.done[key]
        records = self.done[key] = []
        for step in steps:
            if self._one(step, handle, wt, env, stamp, gpu, records, side).failed:
                break  # later builds stand on this one
        return records

    def _one(
        self,
        step: BuildStep,
        handle: Executor,
        wt: str,
        env: dict[str, str],
        stamp: str,
        gpu,
        records: list[BuildRecord],
        side: str | None = None,
    ) -> BuildRecord:
        from pytest_gpuverify.common import live_files
        from pytest_gpuverify.common.files import create_result_file

        workdir = f"{wt}/{step.workdir}".rstrip("/.") if step.workdir not in (None, "", ".") else wt
        record = BuildRecord(
            name=step.name,
            command=shlex.join(step.command),
            gpu=step.gpu,
            container=getattr(handle, "name", None),
            workdir=workdir,
            side=side,
        )
        records.append(record)  # before it runs: an interrupted build is recorded too
        out = self.out_dir / f"build_{step.name}.{stamp}{'.' + side if side else ''}.log"  # one file per side
        started = time.monotonic()
        hold: dict[str, Any] = {}  # filled by gpu() as it lets its own lock go
        try:
            with gpu(hold) if step.gpu else _no_gpu() as (indices, visible, on_start):
                record.gpus = list(indices)
                create_result_file(out)
                live_files.hold(out)  # a running session's: let go of at the session's end
                record.output = out.name
                result = handle.stream_to_file(
                    list(step.command),
                    out,
                    env={**env, **visible},
                    workdir=workdir,
                    timeout_s=self.timeout_s,
                    on_start=on_start,
                )
            record.exit_code, record.timed_out = result.exit_code, result.timed_out
            if result.container_died:
                record.problem = "the container stopped during the build"
            elif result.interrupted:
                record.problem = f"interrupted ({result.interrupted})"
        except Exception as exc:  # no GPU, no container, no file: the targets say why, never run
            record.problem = f"did not run ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})"
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM during the build: the target never started
            from pytest_gpuverify.execute.base import Terminated, interrupt_cause

            cause = getattr(getattr(exc, "outcome", None), "interrupted", None) or interrupt_cause(exc)
            record.problem = f"interrupted ({cause})"
            self._seal(record, out, started, hold)
            raise (Terminated(cause) if cause in ("SIGTERM", "SIGHUP") else KeyboardInterrupt(cause)) from None
        return self._seal(record, out, started, hold)

    @staticmethod
    def _seal(record: BuildRecord, out: Path, started: float, hold: dict | None = None) -> BuildRecord:
        from pytest_gpuverify.records.artifact import sha256_file

        record.lock_taken, record.lock_released = (hold or {}).get("lock_taken"), (hold or {}).get("lock_released")
        record.duration_s = round(time.monotonic() - started, 3)
        if record.output and out.exists():
            record.output_sha256, record.output_bytes = sha256_file(out), out.stat().st_size
        return record


@contextmanager
def _no_gpu() -> Iterator[tuple[list[int], dict[str, str], None]]:
    yield [], {}, None


def build_problems(art: Any, folder: Path) -> list[str]:
    """``gpuverify check``: each build record against its kept output, and a failed one against the run."""
    from pytest_gpuverify.records.artifact import sha256_file

    problems = []
    for record in art.builds:
        if record.output:
            path = folder / record.output
            if not path.is_file():
                problems.append(f"build {record.name}: its output {record.output} is missing")
            elif sha256_file(path) != record.output_sha256:
                problems.append(
                    f"build {record.name}: output sha256 is {sha256_file(path)}, the artifact says "
                    f"{record.output_sha256}"
                )
            elif path.stat().st_size != record.output_bytes:
                problems.append(
                    f"build {record.name}: output is {path.stat().st_size} bytes, the artifact says "
                    f"{record.output_bytes}"
                )
        elif record.problem is None:
            problems.append(f"build {record.name}: no output and no reason it did not run")
    failure = build_failure(list(art.builds))
    blocked = list(art.run.blocked) if art.run else []
    stopped = (
        bool(art.run and art.run.interrupted) and failure is not None and failure.endswith(f"({art.run.interrupted})")
    )
    if failure and failure not in blocked and not stopped:  # a Ctrl-C during a build is the run's own reason
        problems.append(f"build {failure[len(failed_prefix(failure)) :]}, but the run does not say so")
    if failure and art.run and art.run.ran:
        problems.append("a build failed, but the target's command ran")
    if art.ab is None and any(r.side == "A" for r in art.builds):  # the base is built only once it is checked out
        problems.append("a build record is of the base side (A), but the artifact has no A/B record")
    if not failure and any(failed_prefix(b) for b in blocked):
        problems.append("the run says a build failed, but every build record passed")
    return problems
