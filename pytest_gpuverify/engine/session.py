"""The engine: one verify session, from the env file to the artifacts. Usable without pytest.

Data flows one way: options + env file -> host -> sampler and picker (the session's start, start.py,
begun before this module is imported) -> targets, each run through its phases (run.py: place -> check
-> lease -> execute -> parse -> decide) into its artifact. Every per-target problem becomes an
INCONCLUSIVE artifact with its reason; only setup problems (usage, env file) raise, and they raise
before any GPU or container is touched.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from pytest_gpuverify.common import live_files
from pytest_gpuverify.common.clock import SessionClock
from pytest_gpuverify.common.files import FileProblem
from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.config.topics import TopicClaims
from pytest_gpuverify.engine import multirun
from pytest_gpuverify.engine.orphans import Unclaimed, orphan_logs
from pytest_gpuverify.engine.outcome import TargetOutcome
from pytest_gpuverify.engine.prerun import DeclaredBuilds
from pytest_gpuverify.engine.run import TargetRun
from pytest_gpuverify.engine.services import LiveLineFactory, RunContext
from pytest_gpuverify.engine.signing import sign_outputs
from pytest_gpuverify.engine.start import SessionStart
from pytest_gpuverify.engine.store import store_attestation, store_or_keep_elsewhere
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.grants import visible_within
from pytest_gpuverify.lease.guard import SessionGuard
from pytest_gpuverify.lease.picker import GpuGrant
from pytest_gpuverify.parsers.warm import ParserWarmer
from pytest_gpuverify.place.ab import BaseWorktrees
from pytest_gpuverify.place.facts_cache import import_origin_across_sessions
from pytest_gpuverify.place.gitstate import own_output_dirs
from pytest_gpuverify.place.provenance import repo_state
from pytest_gpuverify.records.artifact import RepoRecord
from pytest_gpuverify.records.scheduling import SchedulerRecord, ShardRecord


class VerifySession:
    def __init__(
        self,
        start: SessionStart,
        echo: Callable[[bytes], None] | None = None,
        topics: TopicClaims | None = None,
        live_line: LiveLineFactory | None = None,
    ) -> None:
        """``start``: the session's start (start.py), built before this module is imported, where every
        setup problem raised, and begun in its thread or not (:meth:`start` then does it)."""
        self.starting = start
        self.options, self.env = start.options, start.env
        setup = start.setup
        self.host_row, self.lock_spec, self.picker_command = setup.host_row, setup.lock_spec, setup.picker_command
        self.signer, self.expected_arch = setup.signer, setup.expected_arch
        self.out_dir, self._moves_lock = setup.out_dir, setup.moves_lock
        self.runner, self.backend, self.sampler = start.runner, start.backend, start.sampler
        self.picker, self.places = start.picker, start.places
        self.session_blocked, self.session_notes = start.blocked, start.notes  # the same lists: the start adds to them
        self._imports: dict[tuple, tuple[str | None, str | None]] = {}  # (place, package, env, front)
        self._imports_kept: set[tuple] = set()  # of those, the answers of an earlier session (facts_cache.py)
        self._repos: dict[Path, RepoRecord] = {}
        self.warm_caches: dict[str, bool] = {}
        self.outcomes: list[TargetOutcome] = []
        self.write_problems: list[str] = []
        self.leftover_problems: list[str] = []  # what the session's end could not clean up (a base worktree)
        self.began_wall = time.time()
        self.orphan_logs: list[Unclaimed] = []  # raw logs of stopped runs that no artifact names, found at close
        self.synced = None  # --gpu-sync's SyncRecord, on a worker on a GPU host (remote/sync.py)
        self.topics = topics or TopicClaims()  # shared by xdist workers of one run
        self.echo = echo
        self.on_wait = start.on_wait  # the live line: GPU waits, and a wait for the tickets folder's lock
        self.live_line = live_line  # the terminal's line while a command runs, made per command
        self.clock = SessionClock()  # every timeline entry of this session's artifacts is read off it
        self.collected: float | None = None
        self.parsers = ParserWarmer()  # each kind's parser loads while its first command runs
        self.base_worktrees = BaseWorktrees(self.options.ab_base) if self.options.ab_base else None  # --gpu-ab (ab.py)
        self.builds = DeclaredBuilds(self.out_dir, self.options.timeout_s)  # the declarations' builds (prerun.py)
        self.shard: ShardRecord | None = (
            None  # this session's shard of a run split over several jobs (config/shards.py)
        )

    @property
    def inventory(self) -> dict[int, GpuInfo]:
        """The host's GPUs by index, as the start listed them (empty until it has)."""
        return self.starting.inventory

    @property
    def scheduler(self) -> SchedulerRecord | None:
        """GPUs granted outside the plugin (grants.py), as the start read them."""
        return self.starting.scheduler

    def mark_collected(self) -> None:
        """The session has its targets (pytest's collection is over): the timelines' first entry."""
        self.collected = time.monotonic()

    # -- session ---------------------------------------------------------------------------
    def start(self) -> None:
        """The session's start over (start.py): begun in the background, or done now."""
        self.starting.wait()

    def start_in_background(self) -> None:
        """:meth:`start` in a thread, if the plugin has not begun it already."""
        self.starting.begin()

    def visible_value(self, infos: list[GpuInfo]) -> str:
        """The command's visibility variable for ``infos``: node indices (or the backend's UUIDs), or
        their positions in a grant that an inherited variable already applies (grants.py)."""
        within = visible_within([g.index for g in infos], self.scheduler)
        return ",".join(map(str, within)) if within is not None else self.backend.visible_value(infos)

    def close(self) -> list[TargetOutcome]:
        """The session's end: every artifact is written as its target ended (:meth:`run`); one still
        unwritten (a write cut short by a second Ctrl-C) is written now. A failed write is a line in
        ``write_problems``."""
        self.starting.stop()
        with PROFILE.phase("facts kept for the next session"):
            self.places.remember()
        for outcome in self.outcomes:
            self.write_or_say(outcome)
        if self.base_worktrees is not None:  # after the writes: the artifacts said it goes at the session's end
            self.base_worktrees.remove_all(partial(multirun.remove_in_container, self))
            self.leftover_problems += self.base_worktrees.problems
        live_files.release_under(self.out_dir)  # the builds' logs, claimed by the artifacts written
        with PROFILE.phase("orphan logs looked for"):
            self.orphan_logs = orphan_logs(self.out_dir, before=self.began_wall)
        return self.outcomes

    def fails_session(self) -> bool:
        """Whether the session's exit status is a failure whatever pytest's outcomes say: an artifact not
        written, or a target's verdict other than PASS. A run a test of one's own made (kernel_container)
        is left out: that test inspects its artifact and decides its own outcome (a negative test that
        asserts FAIL passes), and pytest's outcome for it is the session's. Its artifact still says FAIL."""
        return bool(self.write_problems) or any(
            o.artifact.verdict != "PASS" for o in self.outcomes if not o.test_decides
        )

    def write_or_say(self, outcome: TargetOutcome) -> None:
        """:meth:`write`; where neither the asked place nor the user's own folder took it, a line of ``write_problems``."""
        try:
            self.write(outcome)
        except OSError as exc:
            self.write_problems.append(
                str(exc) if isinstance(exc, FileProblem) else f"cannot write {outcome.artifact_path}: {exc}"
            )
            outcome.written = True  # said once: the session's end does not try again

    def write(self, outcome: TargetOutcome) -> None:
        """Store the artifact; where it could not go where asked, it is kept elsewhere and the
        problem is a line of ``write_problems`` (the run's exit is then non-zero)."""
        if outcome.written:
            return
        with PROFILE.phase("artifact validated and stored"):
            stored, problem = store_or_keep_elsewhere(
                outcome.artifact, outcome.artifact_path, self._moves_lock, self.on_wait
            )
        outcome.written, outcome.stored_path = True, stored
        if problem is not None:
            self.write_problems.append(problem)
        if self.signer is not None:  # every file is final now: the artifact embeds the log's sha256
            runs_junit = [self.out_dir / r.junit_xml for r in outcome.artifact.runs if r.junit_xml]  # repeats
            traces = [self.out_dir / p.path for p in outcome.artifact.profiles if p.path]  # --gpu-trace, --gpu-profile
            with PROFILE.phase("signing"):
                sign_outputs(self.signer, [outcome.raw_path, outcome.junit_path, *runs_junit, *traces, stored])
        with PROFILE.phase("attestation"):
            ssh_key = self.signer.key if self.signer is not None else None
            for line in store_attestation(outcome.artifact, stored, ssh_key, self.options.attest_key):
                sys.stderr.write(f"gpuverify: {line}\n")
        if outcome.raw_path is not None:  # claimed by its artifact now
            live_files.release(outcome.raw_path)

    # -- what the targets share -------------------------------------------------------------
    def context(self) -> RunContext:
        """The session's facts as a run starts (frozen: a run cannot change them for the next)."""
        return RunContext(
            options=self.options,
            env=self.env,
            host_row=self.host_row,
            out_dir=self.out_dir,
            signer=self.signer,
            synced=self.synced,
            session_notes=tuple(self.session_notes),
            collected=self.collected,
            echo=self.echo,
            shard=self.shard,
            scheduler=self.scheduler,
            machine=self.starting.machine,
        )

    def unique_topic(self, target: Target) -> str:
        return self.topics.claim(self.out_dir, self.options.topic or target.topic)

    def session_guard(self) -> SessionGuard | None:
        return self.starting.session_guard()

    def repo_state(self, wt_host: Path) -> RepoRecord:
        """The worktree's repo state, read once, before any command of ours could have touched it."""
        if wt_host not in self._repos:
            with PROFILE.phase("repo state (git)"):
                self._repos[wt_host] = repo_state(wt_host, own_output_dirs(self.env.resources.tickets))
        return self._repos[wt_host]

    def import_origin(
        self, handle, package: str, env: Mapping[str, str], tree: RepoRecord | None = None, front: tuple[str, ...] = ()
    ) -> tuple[str | None, str | None]:
        """Where ``package`` imports from in the place (``handle``) with the command's environment ``env``,
        read once per place and environment (the worktree is in its PYTHONPATH). ``tree``: the
        worktree's state, when nothing of ours changed it since: then an earlier session's answer for
        the same place, worktree state, package and environment is taken (facts_cache.py)."""
        key = (handle.place, package, tuple(sorted(env.items())), front)
        if key not in self._imports:
            with PROFILE.phase("import check"):
                origin, why, kept = import_origin_across_sessions(self.places.cache, handle, package, env, tree, front)
            self._imports[key] = (origin, why)
            if kept:
                self._imports_kept.add(key)
        return self._imports[key]

    def imports_kept(self, handle, env: Mapping[str, str]) -> list[str]:
        """The packages whose import check in ``handle`` with ``env`` was an earlier session's answer."""
        items = tuple(sorted(env.items()))
        return sorted(package for place, package, e, _ in self._imports_kept if place == handle.place and e == items)

    # -- one target ------------------------------------------------------------------------
    def run(self, target: Target, grant: GpuGrant | None = None, *, test_decides: bool = False) -> TargetOutcome:
        """Run one target through its phases (run.py) and return its outcome, its artifact written (and
        signed) as it ends, before the next target starts: a session killed later loses nothing it
        finished. ``grant``: GPUs the caller already holds (the ``locked_gpu`` fixture); kept, not released.
        ``test_decides``: the caller is a test that judges the artifact itself (see :meth:`fails_session`)."""
        self.start()
        target_run = TargetRun(self, self.context(), target, grant)
        try:
            return target_run.run()
        finally:  # an interrupted run has its outcome too
            if target_run.outcome is not None:
                target_run.outcome.test_decides = test_decides
                self.outcomes.append(target_run.outcome)
                self.write_or_say(target_run.outcome)


def echo_to_stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
