"""The compile caches of --gpu-ab's sides (``--gpu-ab-cache``), and the autotuner's choices read from each run's
Triton cache once it ended (place/autotune_cache.py).

Both sides start from the same cache state, each in caches of its own made for the target (never the
worktrees' kept ones: the head's may hold an earlier session's builds and tuning results while the
base's, a new worktree, is empty):

- ``cold``: every measured run of each side starts from empty caches, removed once it ended: each run
  compiles and tunes the same way, and what its Triton cache holds afterwards is that run's alone;
- ``warm``: each side runs once, unmeasured, on its own commit (run 0, the warm-up: its output stays in
  the raw log, marked, and is never read as a result), into its own caches, which its measured runs then
  find filled; removed after the target's last run.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_gpuverify.config.targets import TRITON_KINDS
from pytest_gpuverify.place.autotune_cache import CacheRead, read_cached_choices
from pytest_gpuverify.place.caches import CachePlan, plan_caches, remove_cold_caches

COLD = "cold"  # --gpu-ab-cache (config/options.py)


def read_run(
    handle, kind: str, caches: dict[str, str], started: float, known: dict[str, float] | None = None
) -> CacheRead | None:
    """The choices the run's Triton cache holds (None for a kind Triton does not run in); with ``known``
    (the files earlier reads of the same cache took), the files this read took are added to it."""
    if kind not in TRITON_KINDS:
        return None
    read = read_cached_choices(handle, caches.get("TRITON_CACHE_DIR"), started, known)
    if known is not None:
        known.update(read.taken)
    return read


def autotune_reader(cmd, executed) -> Callable | None:
    """For repeated runs of one checkout: each run's Triton cache read once it ended."""
    if cmd.target.kind not in TRITON_KINDS:
        return None
    known: dict[str, float] = {}  # one cache for every run: a file an earlier run wrote is no later run's

    def after(side, n: int, started: float) -> None:
        executed.autotune_reads.append(
            (n, side.label, read_run(cmd.handle, cmd.target.kind, cmd.run_env.caches, started, known))
        )

    return after


class AbCaches:
    """The sides' caches of one A/B target: one set per side (warm) or per side and run (cold)."""

    def __init__(self, state: str, cmd, executed) -> None:
        self.state, self.cmd, self.executed = state, cmd, executed
        self.plans: dict[str, CachePlan] = {}
        self.removed: set[str] = set()
        self.known: dict[str, dict[str, float]] = {}  # per cache root: the files its reads took

    def plan(self, label: str | None, n: int) -> CachePlan:
        tag = f"{label or 'B'}{n if self.state == COLD else 'w'}"
        if tag not in self.plans:
            cmd = self.cmd
            self.plans[tag] = plan_caches(
                cmd.wt, True, f"{cmd.run_id}-ab{tag}", cmd.target.kind, on_host=cmd.handle.place.on_host
            )
        return self.plans[tag]

    def attach(self, sides: list) -> None:
        """Each side's runs get their caches; the artifact records run 1's (a cold run N's end in ``<side>N``)."""
        for side in sides:
            side.caches = lambda n, label=side.label: dict(self.plan(label, n).dirs)
        head, base = self.plan("B", 1), self.plan("A", 1)
        self.executed.cache_dirs, self.executed.base_cache_dirs = dict(head.dirs), dict(base.dirs)
        self.executed.env.update(head.dirs)
        probe = getattr(self.cmd.handle, "probe_caches", None)
        if probe is not None:  # made for this target: nothing to look into (cache_reused stays null)
            probe(head, {})

    def after(self, side, n: int, started: float) -> None:
        plan = self.plan(side.label, n)
        known = self.known.setdefault(plan.root, {})
        read = read_run(self.cmd.handle, self.cmd.target.kind, plan.dirs, started, known)
        self.executed.autotune_reads.append((n, side.label, read))
        if n == 0:
            end = self.executed.warmups[-1] if self.executed.warmups else None
            if end is not None and end.exit_code not in (0, None):
                self.executed.notes.append(
                    f"the warm-up run of side {side.label} exited {end.exit_code}: its caches "
                    "may hold less than the measured runs need (see the raw log's run 0)"
                )
        if self.state == COLD:
            self._remove(plan)

    def _remove(self, plan: CachePlan) -> None:
        if plan.root not in self.removed:
            self.removed.add(plan.root)
            remove_cold_caches(self.cmd.handle, plan, self.executed.notes)

    def remove_all(self) -> None:
        for plan in list(self.plans.values()):
            self._remove(plan)
