"""The declaration's builds (builds.py) of a session: each declaration read once, its builds run once
per session and worktree, before the target's own command. Part of the check phase (run.py); an
object the session holds. The GPU a `gpu = true` build needs comes from the target's run (``gpu``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gpuverify.config.builds import BuildStep
from pytest_gpuverify.config.declarations import DeclarationError
from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.execute.leftovers import run_id_of, run_marker
from pytest_gpuverify.place.builds import SessionBuilds, declared_builds
from pytest_gpuverify.place.gitstate import tracked_changes
from pytest_gpuverify.place.packages import import_env
from pytest_gpuverify.records.builds import build_failure

if TYPE_CHECKING:
    from pytest_gpuverify.engine.phases import Checked
    from pytest_gpuverify.place.provenance import ContainerFacts


class DeclaredBuilds:
    def __init__(self, out_dir: Path, timeout_s: float) -> None:
        self._out_dir, self._timeout_s = out_dir, timeout_s
        self._declared: dict[tuple, tuple[Path | None, tuple[BuildStep, ...]]] = {}  # (location, tree)
        self._ran: SessionBuilds | None = None
        self._changed: dict[tuple[str, str], list[str]] = {}  # tracked files the builds of a tree changed

    def _steps(self, location, tree) -> tuple[Path | None, tuple[BuildStep, ...]]:
        key = (location, tree)
        if key not in self._declared:  # a DeclarationError is not kept: each target that needs it says so
            self._declared[key] = declared_builds(location, tree)
        return self._declared[key]

    def pending(self, target: Target, wt_host: Path) -> bool:
        """Builds still to run for the target in this worktree: its GPU pick waits for them, so that
        no lock is held through a build that needs no GPU (a `gpu = true` one locks its own)."""
        try:
            decl, steps = self._steps(target.location, wt_host)
        except DeclarationError:
            return False  # the target ends blocked with the reason when it gets there
        done = self._ran.done if self._ran is not None else {}
        return bool(steps) and (str(decl), str(wt_host)) not in done

    def run(
        self,
        target: Target,
        place: ContainerFacts,
        wt: str,
        decl_tree: Path,
        built_tree: Path,
        side: str | None,
        stamp: str,
        gpu: Callable,
        checked: Checked,
        allow_dirty: bool = False,
    ) -> bool:
        """The builds of the declaration that governs the target in ``decl_tree`` (the head's checkout:
        both sides of --gpu-ab build with the same commands), run in ``wt`` (``built_tree`` in the
        container), into ``checked.builds``; False, with the reason in ``checked.blocked``, when one
        failed, or changed tracked files (unless ``allow_dirty``). ``side``: "A"/"B" under --gpu-ab, else None."""
        try:
            decl, steps = self._steps(target.location, decl_tree)
        except DeclarationError as exc:  # edited since the session read it, or another tree's file
            checked.blocked.append(str(exc))
            return False
        if not steps:
            return True
        if self._ran is None:
            self._ran = SessionBuilds(self._out_dir, self._timeout_s)
        env = {**import_env(target, wt, place), **run_marker(run_id_of(stamp, "build"))}  # the command's, less its GPUs
        key = (str(decl), str(built_tree))
        kept = [r for r in checked.builds if r.side != side]  # the other side's, already in this run
        before = tracked_changes(built_tree) if key not in self._ran.done else None
        try:
            checked.builds = kept + self._ran.run(key, steps, place.handle, wt, env, stamp, gpu, side)
        except KeyboardInterrupt:  # the artifact still says which build was stopped
            checked.builds = kept + self._ran.done.get(key, [])
            raise
        finally:
            if before is not None:  # the state the command runs on: read again once the builds ran
                after = tracked_changes(built_tree)
                self._changed[key] = sorted(after - before) if after is not None else []
        failure = build_failure(checked.builds)
        if failure:
            checked.blocked.append(failure)
            return False
        return self._changed_by_builds(self._changed.get(key, []), built_tree, side, allow_dirty, checked)

    @staticmethod
    def _changed_by_builds(
        changed: list[str], tree: Path, side: str | None, allow_dirty: bool, checked: Checked
    ) -> bool:
        """Tracked files a build rewrote (hipify, codegen, a version stamp) are code the commit does not
        hold: the run is not of that commit unless the user allows a dirty tree (then it is recorded)."""
        if side == "A":
            checked.base_changed_by_builds = changed
        else:
            checked.changed_by_builds = changed
        if not changed:
            return True
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        said = f"{'base side: ' if side == 'A' else ''}the builds changed tracked files of {tree}: {shown}"
        if allow_dirty:
            checked.notes.append(f"{said} (recorded as dirty: --gpu-allow-dirty)")
            return True
        checked.blocked.append(
            f"{said}: the command would run code its commit does not hold. Fix: have the builds "
            "write only untracked, ignored files, or pass --gpu-allow-dirty to record it"
        )
        return False
