"""The GPU a declared `gpu = true` build runs on (place/builds.py), before its target's command: the run's
own when it holds one or its pick is under way, else one locked for the build alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from pytest_gpuverify.common.threads import environ_copy
from pytest_gpuverify.config.targets import multicast_off
from pytest_gpuverify.engine.services import RunContext, SessionServices
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.guard import RunGuards
from pytest_gpuverify.lease.pickahead import PickAhead
from pytest_gpuverify.lease.picker import GpuGrant


class HoldsGpus(Protocol):
    """What a build's GPU takes of its target's run (run.py's TargetRun): the GPUs it holds or picks."""

    s: SessionServices
    ctx: RunContext
    held: GpuGrant | None
    ahead: PickAhead | None
    early: tuple[GpuGrant, float] | None
    visible: str | None


@contextmanager
def gpu_for_build(run: HoldsGpus, hold: dict) -> Iterator[tuple[list[int], dict[str, str], Callable]]:
    """A GPU for a `gpu = true` build: the run's own when it holds one or its pick is under way (the
    run then keeps them), else one locked for the build alone; armed with the session's guard like
    a command (a kill -9 of us stops it first)."""
    s = run.s
    if run.held is None and run.early is None and run.ahead is not None:
        ahead, run.ahead = run.ahead, None  # from here the run owns the grant (lease, or run's end)
        run.early = (ahead.grant(), ahead.started)
    kept = run.held or (run.early[0] if run.early is not None else None)
    grant = kept or s.picker.acquire(count=1, wait_s=run.ctx.options.wait_s)
    guards = RunGuards(s.session_guard(), grant.fds)
    try:
        infos = [s.inventory.get(i, GpuInfo(index=i)) for i in grant.indices]
        yield (
            grant.indices,
            {
                s.backend.visible_devices_var: run.visible or s.visible_value(infos),
                # NVLink multicast off as in the target's command; on the host the user's own values stand
                **multicast_off(s.backend.vendor, environ_copy() if s.places.on_host else {}),
            },
            guards.on_start,
        )
    finally:
        guards.done()
        if grant is not kept:  # a hold of its own: in the build record, for `gpuverify check`'s overlaps
            s.picker.release(grant)
            hold["lock_taken"] = s.clock.wall(grant.taken_at)
            hold["lock_released"] = s.clock.wall(grant.released_at)
