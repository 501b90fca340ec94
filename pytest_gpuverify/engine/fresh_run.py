"""A target of a `run` row (place/ephemeral.py): its own container, started once its GPUs are locked, with
them; the checks and the command run in it, it is removed, then the GPUs are let go. The run's other
phases are :class:`~pytest_gpuverify.engine.run.TargetRun`'s; this is their order for such a target."""

from __future__ import annotations

from typing import Protocol

from pytest_gpuverify.engine.phases import Checked, Executed, Fresh, Leased, Placed, Results
from pytest_gpuverify.engine.services import RunContext, SessionServices
from pytest_gpuverify.execute.base import Place
from pytest_gpuverify.execute.leftovers import run_id_of
from pytest_gpuverify.lease.guard import RunGuards
from pytest_gpuverify.lease.picker import GpuGrant
from pytest_gpuverify.place.ephemeral import fresh_container, started_note


class Phases(Protocol):
    """What the fresh container's path takes of a target's run (run.py's TargetRun)."""

    s: SessionServices
    ctx: RunContext
    results: Results
    held: GpuGrant | None
    visible: str | None

    def lease(self) -> Leased: ...

    def check(self, placed: Placed, where: Place) -> Checked: ...

    def execute(self, placed: Placed, checked: Checked, leased: Leased, release: bool) -> Executed: ...

    def release(self, leased: Leased) -> None: ...


def run_in_fresh_container(run: Phases, placed: Placed) -> None:
    """A `run` row: lock the GPUs, start the container with them, check and run there, remove it,
    then let go of the GPUs."""
    s, stamp = run.s, run.results.begun.stamp
    assert placed.fresh is not None and placed.fresh.fresh is not None
    leased = run.lease()
    if leased.blocked or leased.grant is None:
        return
    held, run.held = run.held, leased.grant
    fresh = run.results.fresh = Fresh()
    problems: list[str] = []
    run_id = run_id_of(stamp)
    # a kill -9 of us: the session's guard removes the container (its labels checked) before the locks go
    guards = RunGuards(s.session_guard(), leased.grant.fds)
    try:
        with fresh_container(
            s.places.client(),
            placed.fresh.fresh,
            placed.fresh.mounts,
            leased.grant.indices,
            s.backend.vendor,
            run_id,
            run.ctx.options.timeout_s,
            problems,
        ) as record:
            fresh.record = record
            if record is None:
                fresh.blocked.extend(problems)
                return
            guards.on_start(["fresh", record.id or record.name, run_id])
            run.visible = record.visible
            fresh.notes.append(started_note(record))
            checked = run.check(placed, Place(record.name))
            if not checked.blocked:
                run.execute(placed, checked, leased, release=False)
    finally:
        guards.done()  # the container is removed by now (fresh_container's exit)
        run.held, run.visible = held, None
        run.release(leased)
