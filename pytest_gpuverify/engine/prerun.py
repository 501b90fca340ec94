"""What a session does around a target's command besides running it: a fresh container for a `run`
row (ephemeral.py) and the declaration's builds (builds.py). A mixin of :class:`.session.VerifySession`,
kept apart so that the engine's main path stays readable; it uses the session's picker, clock and
container facts and nothing else of it."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from pytest_gpuverify.place.builds import SessionBuilds, build_failure, declared_builds
from pytest_gpuverify.config.declarations import DeclarationError
from pytest_gpuverify.place.ephemeral import fresh_container
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.guard import RunGuards
from pytest_gpuverify.execute.leftovers import run_marker
from pytest_gpuverify.lease.lock import LockError
from pytest_gpuverify.lease.picker import NoGpu, PickerError
from pytest_gpuverify.config.targets import pythonpath

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_gpuverify.place.ab import BaseWorktrees
    from pytest_gpuverify.engine.clock import SessionClock
    from pytest_gpuverify.place.container_checks import ContainerPlaces
    from pytest_gpuverify.gpu.base import GpuBackend
    from pytest_gpuverify.lease.guard import SessionGuard
    from pytest_gpuverify.config.options import RunOptions
    from pytest_gpuverify.lease.pickahead import PickAhead
    from pytest_gpuverify.lease.picker import GpuGrant, GpuPicker


class PreRunSteps:
    _visible: Optional[str] = None  # the visible-devices value inside a fresh container that renumbers its GPUs
    _session_builds: Optional[SessionBuilds] = None
    _declared: Optional[dict] = None  # (location, tree) -> declared_builds(...): read once per session

    if TYPE_CHECKING:  # what VerifySession (session.py) provides; set in its __init__
        options: RunOptions
        base_worktrees: Optional[BaseWorktrees]
        picker: GpuPicker
        clock: SessionClock
        backend: GpuBackend
        out_dir: Path
        _external_grant: Optional[GpuGrant]
        _ahead: Optional[PickAhead]
        _inventory: dict[int, GpuInfo]
        places: ContainerPlaces

        def _session_guard(self) -> Optional[SessionGuard]: ...
        def _check_imports_and_run(self, target, art, outcome, facts, cfacts, wt: str, ws, stamp: str) -> None: ...

    def _in_fresh_container(self, res, target, art, outcome, facts, wt: str, ws, stamp: str) -> None:
        """A `run` row: lock the GPUs, start the container with them, run there, remove it, then let go."""
        held, ahead, self._ahead = self._external_grant, self._ahead, None  # a pick started before the checks
        art.timeline.pick_started = self.clock.wall(ahead.started if ahead is not None else time.monotonic())
        try:
            grant = held or (ahead.grant() if ahead is not None
                             else self.picker.acquire(count=target.gpus, wait_s=self.options.wait_s))
        except (NoGpu, PickerError, LockError) as exc:
            facts.blocked.append(str(exc))
            return
        self._external_grant = grant  # _run_on_gpu runs on it and leaves the release to us
        problems: list[str] = []
        run_id = f"{stamp}-{os.getpid()}"
        # a kill -9 of us: the session's guard removes the container (its labels checked) before the locks go
        guards = RunGuards(self._session_guard(), grant.fds)
        try:
            with fresh_container(self.places.client(), res.fresh, res.mounts, grant.indices, self.backend.vendor,
                                 run_id, self.options.timeout_s, problems) as record:
                art.fresh_container = record
                if record is None:
                    facts.blocked.extend(problems)
                    return
                guards.on_start(["fresh", record.id or record.name, run_id])
                art.container, self._visible = record.name, record.visible
                art.notes.append(f"fresh container {record.name} from {record.image} (Containers row {record.row}); "
                                 f"devices passed: {', '.join(record.devices) or 'none'}"
                                 + (f"; not on this host: {', '.join(record.devices_missing)}" if record.devices_missing else ""))
                cfacts = self.places.checked(record.name, art, facts)
                art.image_digest = record.repo_digests[0] if record.repo_digests else record.image_id
                self._check_imports_and_run(target, art, outcome, facts, cfacts, wt, ws, stamp)
        finally:
            guards.done()  # the container is removed by now (fresh_container's exit)
            self._external_grant, self._visible = held, None
            if grant is not held:
                self.picker.release(grant)
                art.timeline.lock_released = self.clock.wall(grant.released_at)

    def _declared_builds(self, location, tree):
        if self._declared is None:
            self._declared = {}
        key = (location, tree)
        if key not in self._declared:  # a DeclarationError is not kept: each target that needs it says so
            self._declared[key] = declared_builds(location, tree)
        return self._declared[key]

    def builds_pending(self, target, wt_host) -> bool:
        """Builds still to run for the target in this worktree: its GPU pick waits for them, so that
        no lock is held through a build that needs no GPU (a `gpu = true` one locks its own)."""
        try:
            decl, steps = self._declared_builds(target.location, wt_host)
        except DeclarationError:
            return False  # the target ends blocked with the reason when it gets there
        done = self._session_builds.done if self._session_builds is not None else {}
        return bool(steps) and (str(decl), str(wt_host)) not in done

    def _run_builds(self, target, art, facts, cfacts, wt: str, ws, stamp: str) -> bool:
        """The declaration's builds (once per session and worktree); False, with the reason, when one failed.
        Under --gpu-ab these build the head's worktree (side B); :meth:`_run_base_builds` the base's."""
        side = "B" if self.base_worktrees is not None else None
        return self._builds_on(target, art, facts, cfacts, wt, ws.wt_host, ws.wt_host, stamp, side)

    def _run_base_builds(self, target, art, facts, cfacts, plan, ws, stamp: str) -> bool:
        """--gpu-ab: the same declared builds on the base worktree (side A), once per session and base
        worktree, before the target's first run; a failed one blocks the target (nothing runs)."""
        if facts.blocked:
            return False
        if plan is None or plan.base is None:
            return True
        return self._builds_on(target, art, facts, cfacts, plan.base_wt, ws.wt_host, plan.base.path, stamp, "A")

    def _builds_on(self, target, art, facts, cfacts, wt: str, decl_tree, built_tree, stamp: str,
                   side: Optional[str]) -> bool:
        """The builds of the declaration that governs the target in ``decl_tree`` (the head's checkout:
        both sides build with the same commands), run in ``wt`` (``built_tree`` in the container)."""
        try:
            decl, steps = self._declared_builds(target.location, decl_tree)
        except DeclarationError as exc:  # edited since the session read it, or another tree's file
            facts.blocked.append(str(exc))
            return False
        if not steps:
            return True
        if self._session_builds is None:
            self._session_builds = SessionBuilds(self.out_dir, self.options.timeout_s)
        env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": pythonpath(target.kind, wt),
               **({"GPU_ARCHS": cfacts.arch} if cfacts.arch else {}), **run_marker(f"{stamp}-{os.getpid()}-build")}
        key = (str(decl), str(built_tree))
        kept = [r for r in art.builds if r.side != side]  # the other side's, already in this artifact
        try:
            art.builds = kept + self._session_builds.run(key, steps, cfacts.handle, wt, env, stamp, self._build_gpu,
                                                         side)
        except KeyboardInterrupt:  # the artifact still says which build was stopped
            art.builds = kept + self._session_builds.done.get(key, [])
            raise
        failure = build_failure(art.builds)
        if failure:
            facts.blocked.append(failure)
        return failure is None

    @contextmanager
    def _build_gpu(self, hold: dict) -> Iterator[tuple[list[int], dict[str, str], Callable]]:
        """A GPU for a `gpu = true` build: the run's own when it holds one, else one locked for the build;
        the build is armed with the session's guard like a command (a kill -9 of us stops it first)."""
        # the target's own GPUs when it holds them or its pick is under way (pickahead.py): the run then
        # keeps them; else one locked for the build alone
        kept = self._external_grant or (self._ahead.grant() if self._ahead is not None else None)
        grant = kept or self.picker.acquire(count=1, wait_s=self.options.wait_s)
        guards = RunGuards(self._session_guard(), grant.fds)
        try:
            infos = [self._inventory.get(i, GpuInfo(index=i)) for i in grant.indices]
            yield (grant.indices, {self.backend.visible_devices_var: self._visible or self.backend.visible_value(infos)},
                   guards.on_start)
        finally:
            guards.done()
            if grant is not kept:  # a hold of its own: in the build record, for `gpuverify check`'s overlaps
                self.picker.release(grant)
                hold["lock_taken"] = self.clock.wall(grant.taken_at)
                hold["lock_released"] = self.clock.wall(grant.released_at)
