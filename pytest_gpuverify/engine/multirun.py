"""The engine's side of ``repeats`` and ``--gpu-ab``: what a target's repeated runs need before the
lock (the base worktree, its import check: part of the check phase) and how they run under it
(rounds.py: the execute phase), called from run.py with a few lines. A single run (no repeats, no A/B) never comes here."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.config.targets import PYTEST_KINDS, Target, command_argv, junit_path, pythonpath
from pytest_gpuverify.engine.ab_caches import AbCaches, autotune_reader
from pytest_gpuverify.engine.phases import Checked, Command, Executed, Plan
from pytest_gpuverify.engine.rounds import Side, run_rounds
from pytest_gpuverify.execute.leftovers import run_marker
from pytest_gpuverify.place.ab import FOLDER, AbError, BaseWorktree, BaseWorktrees
from pytest_gpuverify.place.caches import plan_caches, remove_cold_caches
from pytest_gpuverify.place.packages import Lookup, UnderTest, check_imports, import_env
from pytest_gpuverify.place.provenance import ContainerFacts, move_out
from pytest_gpuverify.records.artifact import AbRecord


def repeats_for(options, target: Target) -> int | None:
    """--gpu-repeats wins over the declaration's ``repeats``; None: not asked for."""
    return options.repeats or target.repeats


def plan_for(
    options,
    worktrees: BaseWorktrees | None,
    target: Target,
    place: ContainerFacts,
    wt: str,
    wt_host: Path,
    head_sha: str | None,
    checked: Checked,
    under: UnderTest,
    lookup: Lookup,
) -> None:
    """The check phase's plan of the target's runs (``checked.plan``; None for a plain single run) and
    its A/B record; a problem (no base commit, base imports elsewhere) goes to ``checked.blocked`` and
    the target never runs."""
    repeats = repeats_for(options, target) or 1
    handle = place.handle
    if worktrees is None:
        checked.plan = Plan(repeats, head_sha=head_sha) if repeats > 1 else None
        return
    try:
        base = worktrees.for_checkout(wt_host)
    except AbError as exc:
        checked.blocked.append(str(exc))
        return
    if target.path is not None and target.path.is_relative_to(wt_host):
        rel = target.path.relative_to(wt_host)
        if not (base.path / rel).exists():
            checked.blocked.append(
                f"--gpu-ab {base.ref}: {rel} does not exist at {base.sha[:12]}, so the base "
                "side cannot run it. Fix: pick a BASE that has the target, or drop --gpu-ab for it"
            )
            return
    base_wt = base.container_path(wt)
    base.inside[handle.place] = base_wt
    checked.ab = AbRecord(base_ref=base.ref, base_sha=base.sha, head_sha=head_sha, base_worktree=str(base.path))
    imports = check_imports(under, base_wt, import_env(target, base_wt, place), lookup, side="base side: ")
    if imports.blocked:
        checked.blocked.extend(imports.blocked)
        return
    checked.plan = Plan(repeats, base, base_wt, head_sha, place.pythonpath, cache_state=ab_cache_state(options))
    checked.ab.cache_state = checked.plan.cache_state


def ab_cache_state(options) -> str:
    """--gpu-ab-cache, else cold under --gpu-cold (a cold-compile number), else warm."""
    return options.ab_cache or ("cold" if options.cold else "warm")


def run_planned(plan: Plan, cmd: Command, executed: Executed):
    """Every run of the plan into ``cmd.raw_path``; returns the runs folded into one outcome. Each run
    that ended is in ``executed.runs`` (so an interrupt keeps them)."""
    target, handle = cmd.target, cmd.handle

    def argv(side_label: str):
        return lambda n: command_argv(target, cmd.rel, f"{cmd.run_id}-{side_label}{n}")

    head = Side("B" if plan.base else None, plan.head_sha, argv("B"), cmd.env, cmd.workdir)
    sides, base_caches = [head], None
    ab_caches = AbCaches(plan.cache_state, cmd, executed) if plan.cache_state is not None else None
    if plan.base is not None and plan.base_wt is not None:  # plan_for sets both
        base_caches = plan_caches(plan.base_wt, cmd.cold, f"{cmd.run_id}-A", target.kind, on_host=handle.place.on_host)
        base_env = cmd.run_env.model_copy(
            update={
                "pythonpath": pythonpath(target.kind, plan.base_wt, plan.inherited_pythonpath),
                "caches": dict(base_caches.dirs),
            }
        )
        workdir = plan.base_wt + cmd.workdir[len(cmd.wt) :]
        sides.insert(0, Side("A", plan.base.sha, argv("A"), {**base_env.as_env(), **run_marker(cmd.run_id)}, workdir))
        executed.base_cache_dirs = dict(base_caches.dirs)
        if ab_caches is not None:  # each side's own, made for this target (ab_caches.py): not the worktrees'
            base_caches = None
            ab_caches.attach(sides)

    def fetch_junit(side: Side, n: int) -> str | None:
        if target.kind not in PYTEST_KINDS:
            return None
        if n == 0:  # a warm-up's report is no result: removed where it was written
            handle.capture(["rm", "-f", junit_path(f"{cmd.run_id}-{side.label or 'B'}0")], timeout_s=60)
            return None
        tag = f"{side.label or ''}{n}"
        path, note = move_out(
            handle,
            junit_path(f"{cmd.run_id}-{side.label or 'B'}{n}"),
            cmd.raw_path.parent / f"bench_{cmd.topic}.{cmd.stamp}.{tag}.junit.xml",
        )
        if note:
            executed.notes.append(f"run {n}{' side ' + side.label if side.label else ''}: {note}")
        return path.name if path else None

    warm = ab_caches is not None and ab_caches.state == "warm"
    try:
        result, _ = run_rounds(
            handle,
            sides,
            plan.repeats,
            cmd.raw_path,
            cmd.timeout_s,
            echo=cmd.echo,
            on_start=cmd.on_start,
            fetch_junit=fetch_junit,
            slices=executed.runs,
            warmups=executed.warmups if warm else None,
            after=ab_caches.after if ab_caches is not None else autotune_reader(cmd, executed),
        )
    finally:
        if base_caches is not None and cmd.cold:
            remove_cold_caches(handle, base_caches, executed.notes)
        if ab_caches is not None:
            ab_caches.remove_all()
    return result


def remove_in_container(session, wt: BaseWorktree) -> None:
    """What the container's user wrote in the base worktree (root-owned files the host user may not
    delete), removed from inside, before git forgets it."""
    from pytest_gpuverify.execute.base import ExecutorError

    for place, path in wt.inside.items():
        facts = session.places.facts.get(place)
        if facts is None or path.rstrip("/").split("/")[-2:-1] != [FOLDER]:
            continue  # only ever a worktree of ours, at the path its container sees
        try:
            facts.handle.capture(["rm", "-rf", path], timeout_s=120)
        except (ExecutorError, OSError):
            pass
