"""The execute phase's watch of its GPUs (lease/watch.py): the place's executor, wrapped so that every
command it streams (one, or each of a plan's runs) is watched from its start to its end."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_gpuverify.execute.base import ExecOutcome, Executor, Interrupted
from pytest_gpuverify.execute.container import ContainerError
from pytest_gpuverify.execute.leftovers import marked_in_container
from pytest_gpuverify.lease.watch import CommandWatch, OwnProcesses
from pytest_gpuverify.place.caches import CachePlan, CacheProbe
from pytest_gpuverify.records.artifact import GpuWatch, RunSlice


class WatchedPlace:
    """``handle`` as it is, but for :meth:`stream_to_file`: its held GPUs are watched around each command,
    one :class:`GpuWatch` per command into ``records``."""

    def __init__(self, handle: Executor, backend, indices: list[int], wall: Callable[[float], str | None]) -> None:
        self._handle, self._backend, self._indices, self._wall = handle, backend, indices, wall
        self.records: list[GpuWatch] = []
        self._ending: list[CommandWatch] = []  # watches whose last look runs on: :meth:`finish_watches`
        self._cache_probe: CacheProbe | None = None
        self._probe: tuple[str, ...] = ()  # the folders the next command's start looks into
        self._caches_held: bool | None = None  # what that look found
        try:  # the run's processes are its command's tree, on the host or in this container (on_start)
            self._container_id: str | None = handle.inspect().get("Id")
        except (ContainerError, OSError):
            self._container_id = None

    def probe_caches(self, plan: CachePlan, seen: dict[str, bool]) -> None:
        """Whether the warm compile caches of ``plan`` already held builds: where not known without
        looking, they are looked into just before the next command streamed here starts (a plan's
        first run, or the single run), by that command's own start: no command of its own."""
        self._cache_probe = CacheProbe.of(plan, seen)
        self._probe = self._cache_probe.folders

    def caches_reused(self) -> bool | None:
        """The answer for the artifact (None: a cold run, or the command never started)."""
        return self._cache_probe.answer(self._caches_held) if self._cache_probe is not None else None

    def __getattr__(self, name: str):
        return getattr(self._handle, name)

    def stream_to_file(
        self,
        argv: Sequence[str],
        out_path: Path,
        env: Mapping[str, str] | None = None,
        workdir: str = "/",
        timeout_s: float = 3600.0,
        echo: Callable[[bytes], None] | None = None,
        on_start: Callable[[list[str]], None] | None = None,
        probe: Sequence[str] = (),
    ) -> ExecOutcome:
        ask = (
            (lambda pid, run_id: marked_in_container(self._handle.capture, pid, run_id)) if self._container_id else None
        )
        self.finish_watches()  # a plan's earlier run: its last look is over before the next run starts
        watch = CommandWatch(self._backend, self._indices, OwnProcesses(self._container_id, ask=ask), self._wall)
        watch.start()

        def started(spec: list[str]) -> None:
            if on_start is not None:  # the guard first: a kill -9 of us must stop the command
                on_start(spec)
            watch.on_start(spec)

        probe, self._probe = tuple(probe) or self._probe, ()
        try:
            outcome = self._handle.stream_to_file(
                argv, out_path, env=env, workdir=workdir, timeout_s=timeout_s, echo=echo, on_start=started, probe=probe
            )
        except Interrupted as stopped:
            if probe:
                self._caches_held = stopped.outcome.caches_held
            raise
        finally:
            watch.end()  # its last look runs alongside what follows the command (finish_watches)
            self._ending.append(watch)
        if probe:
            self._caches_held = outcome.caches_held
        return outcome

    def finish_watches(self) -> None:
        """Waits for the watches' last looks and keeps their records: before the GPUs' lock is let go."""
        ending, self._ending = self._ending, []
        self.records.extend(watch.stop() for watch in ending)

    def labelled(self, runs: list[RunSlice]) -> list[GpuWatch]:
        """The records (their last looks waited for), each named by the planned run it watched (in the
        order they ran)."""
        self.finish_watches()
        if not runs:
            return list(self.records)
        return [w.model_copy(update={"run": r.run, "side": r.side}) for w, r in zip(self.records, runs)] + self.records[
            len(runs) :
        ]
