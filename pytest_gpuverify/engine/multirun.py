"""The engine's side of ``repeats`` and ``--gpu-ab``: what a target's repeated runs need before the
lock (the base worktree, its import check) and how they run under it (rounds.py), called from
session.py with a few lines. A single run (no repeats, no A/B) never comes here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

from pytest_gpuverify.place.ab import FOLDER, AbError, BaseWorktree, BaseWorktrees
from pytest_gpuverify.engine.artifact import AbRecord, Artifact
from pytest_gpuverify.place.caches import plan_caches, remove_cold_caches
from pytest_gpuverify.execute.leftovers import run_marker
from pytest_gpuverify.place.provenance import import_origin, move_out, origin_inside
from pytest_gpuverify.engine.rounds import Side, run_rounds
from pytest_gpuverify.config.targets import PYTEST_KINDS, Target, command_argv, import_package, junit_path, pythonpath


def repeats_for(options, target: Target) -> Optional[int]:
    """--gpu-repeats wins over the declaration's ``repeats``; None: not asked for."""
    return options.repeats or target.repeats


@dataclass
class Plan:
    repeats: int
    base: Optional[BaseWorktree] = None
    base_wt: Optional[str] = None  # the base worktree in the container
    head_sha: Optional[str] = None


def plan_for(options, worktrees: Optional[BaseWorktrees], target: Target, art: Artifact, handle,
             wt: str, wt_host: Path, blocked: list[str]) -> Optional[Plan]:
    """None for a plain single run; a problem (no base commit, base imports elsewhere) goes to
    ``blocked`` and the target never runs."""
    repeats = repeats_for(options, target) or 1
    if worktrees is None:
        return Plan(repeats) if repeats > 1 else None
    try:
        base = worktrees.for_checkout(wt_host)
    except AbError as exc:
        blocked.append(str(exc))
        return None
    if target.path is not None and target.path.is_relative_to(wt_host):
        rel = target.path.relative_to(wt_host)
        if not (base.path / rel).exists():
            blocked.append(f"--gpu-ab {base.ref}: {rel} does not exist at {base.sha[:12]}, so the base side "
                           "cannot run it. Fix: pick a BASE that has the target, or drop --gpu-ab for it")
            return None
    base_wt = base.container_path(wt)
    plan = Plan(repeats, base, base_wt, art.repos[0].sha if art.repos else None)  # read once per worktree
    base.inside[handle.name] = base_wt
    art.ab = AbRecord(base_ref=base.ref, base_sha=base.sha, head_sha=plan.head_sha, base_worktree=str(base.path))
    package = import_package(target.kind)
    if package:
        origin, why = import_origin(handle, package, pythonpath(target.kind, base_wt))
        if not origin_inside(origin, base_wt):
            blocked.append(why or f"base side: {package} imports from {origin}, outside the base worktree "
                           f"{plan.base_wt}/: the run would test another checkout")
            return None
    return plan


def run_planned(session, plan: Plan, target: Target, art: Artifact, handle, wt: str,
                rel: Optional[PurePosixPath], run_env, command_env: dict, run_id: str, stamp: str,
                raw_path: Path, echo, on_start):
    """Every run of the plan into ``raw_path``; returns the runs folded into one outcome."""
    def argv(side_label: str):
        return lambda n: command_argv(target, rel, f"{run_id}-{side_label}{n}")

    head = Side("B" if plan.base else None, plan.head_sha or (art.repos[0].sha if art.repos else None),
                argv("B"), command_env, art.workdir or wt)
    sides, base_caches = [head], None
    if plan.base is not None and plan.base_wt is not None and art.ab is not None:  # plan_for sets all three
        base_caches = plan_caches(plan.base_wt, session.options.cold, f"{run_id}-A",
                                  on_host=handle.name == "host")
        base_env = run_env.model_copy(update={
            "pythonpath": pythonpath(target.kind, plan.base_wt), "jit_dir": base_caches.jit_dir,
            "extra": {k: v for k, v in base_caches.dirs.items() if k != "AITER_JIT_DIR"}})
        workdir = plan.base_wt + (art.workdir or wt)[len(wt):]
        sides.insert(0, Side("A", plan.base.sha, argv("A"), {**base_env.as_env(), **run_marker(run_id)}, workdir))
        art.ab.base_cache_dirs = dict(base_caches.dirs)

    def fetch_junit(side: Side, n: int) -> Optional[str]:
        if target.kind not in PYTEST_KINDS:
            return None
        tag = f"{side.label or ''}{n}"
        path, note = move_out(handle, junit_path(f"{run_id}-{side.label or 'B'}{n}"),
                              raw_path.parent / f"bench_{art.topic}.{stamp}.{tag}.junit.xml")
        if note:
            art.notes.append(f"run {n}{' side ' + side.label if side.label else ''}: {note}")
        return path.name if path else None

    art.runs = []
    try:
        result, _ = run_rounds(handle, sides, plan.repeats, raw_path, session.options.timeout_s,
                               echo=echo, on_start=on_start, fetch_junit=fetch_junit, slices=art.runs)
    finally:
        if base_caches is not None and session.options.cold:
            remove_cold_caches(handle, base_caches, art.notes)
        if art.ab is not None:
            art.ab.order = [f"{s.side}{s.run}" for s in art.runs]
    return result


def remove_worktrees(session) -> None:
    """The session's base worktrees, removed; what the container's user wrote there first from inside."""
    from pytest_gpuverify.execute.container import ContainerError

    def in_container(wt: BaseWorktree) -> None:
        for name, path in wt.inside.items():
            facts = session._containers.get(name)
            if facts is None or path.rstrip("/").split("/")[-2:-1] != [FOLDER]:
                continue  # only ever a worktree of ours, at the path its container sees
            try:
                facts.handle.capture(["rm", "-rf", path], timeout_s=120)
            except (ContainerError, OSError):
                pass

    worktrees = session.base_worktrees
    worktrees.remove_all(in_container)
    for outcome in session.outcomes:
        if outcome.artifact.ab is not None:
            outcome.artifact.notes.extend(worktrees.problems)
            if outcome.artifact.ab.base_worktree in worktrees.removed:
                outcome.artifact.notes.append(f"base worktree {outcome.artifact.ab.base_worktree} removed after the run")
