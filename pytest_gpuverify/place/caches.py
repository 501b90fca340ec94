"""Compile caches of a run: per-worktree and kept (warm), or fresh and removed after (``--gpu-cold``).

A cold-compile number needs empty JIT caches (aiter's modules, Triton's kernels, FlyDSL's runtime
cache); a warm one wants them kept, but never shared between worktrees, where they would mix two
checkouts' builds. The paths live inside the container (or on the host with --gpu-container none).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pytest_gpuverify.config.targets import AITER_KINDS, SCRATCH_ROOT

CACHE_VARS = {"AITER_JIT_DIR": "aiter_jit", "TRITON_CACHE_DIR": "triton", "FLYDSL_RUNTIME_CACHE_DIR": "flydsl"}


def cache_vars_for(kind: str) -> dict[str, str]:
    """The caches a kind's command gets: aiter's JIT folder only where aiter is what runs."""
    return {var: sub for var, sub in CACHE_VARS.items() if var != "AITER_JIT_DIR" or kind in AITER_KINDS}


@dataclass(frozen=True)
class CachePlan:
    root: str  # everything below is this run's (cold) or this worktree's (warm)
    dirs: dict[str, str]  # environment variable -> directory
    cold: bool
    base: str = SCRATCH_ROOT  # the folder of all caches: /tmp/gpuverify in a container, the user's own on the host


def plan_caches(worktree: str, cold: bool, run_id: str, kind: str, on_host: bool = False) -> CachePlan:
    """``on_host`` (--gpu-container none): under the user's own folder, since users share the host's
    /tmp and one user's cache folder would refuse the next user's build (another user could even
    make it first and own the caches): never the fixed /tmp/gpuverify there."""
    from pytest_gpuverify.common.files import private_folder

    base = str(private_folder().path) if on_host else SCRATCH_ROOT
    if cold:
        root = f"{base}/cold/{run_id}"
    else:
        root = f"{base}/cache/{hashlib.sha1(worktree.encode()).hexdigest()[:12]}"
    return CachePlan(root, {var: f"{root}/{sub}" for var, sub in cache_vars_for(kind).items()}, cold, base)


@dataclass
class CacheProbe:
    """Whether the warm caches of ``plan`` already held builds: ``known`` without looking (None for a
    cold run, True once this session ran the worktree), else the ``folders`` to look into just before
    the command starts, once per worktree and session (``seen`` remembers the answer)."""

    plan: CachePlan
    seen: dict[str, bool]
    known: bool | None = None
    folders: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: CachePlan, seen: dict[str, bool]) -> CacheProbe:
        if plan.cold:
            return cls(plan, seen)
        if plan.root in seen:
            return cls(plan, seen, known=True)  # this session's earlier run of the worktree filled them
        return cls(plan, seen, folders=tuple(plan.dirs.values()))

    def answer(self, held: bool | None) -> bool | None:
        """What the artifact records: ``known``, or the look's answer ``held`` (None where the command
        never started: the next run looks again)."""
        if not self.folders:
            return self.known
        if held is not None:
            self.seen[self.plan.root] = held
        return held


def remove_cold_caches(handle, plan: CachePlan, notes: list[str]) -> None:
    """Remove the run's own cold caches, and nothing else."""
    from pytest_gpuverify.execute.container import ContainerError

    if not plan.cold or not plan.root.startswith(f"{plan.base}/cold/"):
        return
    try:
        handle.capture(["rm", "-rf", plan.root], timeout_s=120)
    except (ContainerError, KeyboardInterrupt):
        notes.append(f"cold caches under {plan.root} could not be removed")
