"""The engine: one verify session, from the env file to the artifacts. Usable without pytest.

Data flows one way: options + env file -> host -> GPU + lock -> container run -> parse -> verdict ->
artifact. Every per-target problem becomes an INCONCLUSIVE artifact with its reason; only setup
problems (usage, env file) raise, and they raise before any GPU or container is touched.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from pytest_gpuverify import __version__
from pytest_gpuverify.engine.artifact import Artifact, RepoRecord, Timeline, store_artifact, utc_now
from pytest_gpuverify.engine.clock import SessionClock
from pytest_gpuverify.place.container_checks import HOST, ContainerPlaces, start_gpus
from pytest_gpuverify.execute.base import Interrupted, interrupt_cause
from pytest_gpuverify.execute.container import docker_client
from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.engine.files import FileProblem, create_result_file
from pytest_gpuverify.gpu import select_backend
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.place.gitstate import own_output_dirs
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.reporting.live import RunningLine, running_echo
from pytest_gpuverify.execute.host import HostExecutor
from pytest_gpuverify.execute.leftovers import run_marker
from pytest_gpuverify.lease.lock import LockError
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.engine.outcome import TargetOutcome, fetch_junit, finish, gpu_records, record_exec, seal, target_record
from pytest_gpuverify.engine.overlap import Background, ParserWarmer
from pytest_gpuverify.parsers.dispatch import context_for
from pytest_gpuverify.lease.pickahead import PickAhead
from pytest_gpuverify.engine.runs_log import parse_log
from pytest_gpuverify.engine import multirun
from pytest_gpuverify.place.ab import BaseWorktrees
from pytest_gpuverify.lease.picker import GpuGrant, GpuPicker, NoGpu, PickerError
from pytest_gpuverify.engine.prerun import PreRunSteps
from pytest_gpuverify.place.provenance import import_origin, origin_inside, read_container_facts, repo_state
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.lease.shared_readings import SharedReadings
from pytest_gpuverify.engine.signing import sign_outputs
from pytest_gpuverify.engine.setup_checks import check_setup
from pytest_gpuverify.config.topics import TopicClaims
from pytest_gpuverify.lease.window_history import history_source
from pytest_gpuverify.config.targets import PYTEST_KINDS, RunEnvironment, Target, command_argv, import_package, pythonpath
from pytest_gpuverify.place.caches import plan_caches, remove_cold_caches, warm_cache_reused
from pytest_gpuverify.lease.guard import RunGuards, SessionGuard
from pytest_gpuverify.engine.verdict import RunFacts
from pytest_gpuverify.place.resolve import map_to_container
from pytest_gpuverify.place.workspace import WorkspaceError, locate


class VerifySession(PreRunSteps):
    def __init__(
        self,
        options: RunOptions,
        env: EnvFile,
        docker_factory: Callable[[], object] = docker_client,
        echo: Optional[Callable[[bytes], None]] = None,
        on_wait: Optional[Callable[[str], None]] = None,
        topics: Optional[TopicClaims] = None,
        on_running: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.options = options
        self.env = env
        setup = check_setup(options, env)  # every setup problem raises here, before any GPU or container
        self.host_row, self.lock_spec, self.picker_command = setup.host_row, setup.lock_spec, setup.picker_command
        self.signer, self.expected_arch = setup.signer, setup.expected_arch
        self.out_dir, self._moves_lock = setup.out_dir, setup.moves_lock
        self.runner = LocalHost()
        self.backend = select_backend(self.expected_arch, self.runner)
        interval = min(1.0, max(0.2, options.window_s / 5))
        shared = SharedReadings(f"{self.host_row.host}|{self.lock_spec.path_template}", max_age_s=interval * 0.9)
        self.sampler = IdleSampler(
            self.backend, options.window_s, interval_s=interval, lock_path_for=self.lock_spec.path_for, shared=shared,
            history=history_source(self.backend, shared.path, self.expected_arch, self.lock_spec.path_template, interval),
        )
        self.picker = GpuPicker(self.sampler, self.lock_spec, self.runner, self.picker_command, on_wait=on_wait, where=self.host_row.host)
        self.places = ContainerPlaces(env, options, self.host_row.host, docker_factory, self.backend.vendor,
                                      self.expected_arch)
        self._imports: dict[tuple[str, str, str], tuple[Optional[str], Optional[str]]] = {}
        self._inventory: dict[int, GpuInfo] = {}
        self._repos: dict[Path, RepoRecord] = {}
        self._warm_caches: dict[str, bool] = {}
        self.host_arch: Optional[str] = None
        self.session_blocked: list[str] = []
        self._session_notes: list[str] = []
        self.outcomes: list[TargetOutcome] = []
        self.write_problems: list[str] = []
        self.synced = None  # --gpu-sync's SyncRecord, on a worker on a GPU host (remote/sync.py)
        self.topics = topics or TopicClaims()  # shared by xdist workers of one run
        self._echo = echo
        self._on_running = on_running  # the live line while a command runs (reporting/live.py)
        self._started = False
        self._external_grant: Optional[GpuGrant] = None
        self.clock = SessionClock()  # every timeline entry of this session's artifacts is read off it
        self._guard: Optional[SessionGuard] = None
        self._starter: Optional[Background] = None  # start_in_background's thread
        self._collected: Optional[float] = None
        self._parsers = ParserWarmer()  # each kind's parser loads while its first command runs
        self._ahead: Optional[PickAhead] = None  # the current target's pick, started before its checks
        self.base_worktrees = BaseWorktrees(options.ab_base) if options.ab_base else None  # --gpu-ab (ab.py)

    def mark_collected(self) -> None:
        """The session has its targets (pytest's collection is over): the timelines' first entry."""
        self._collected = time.monotonic()

    # -- session ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the idle window first (it fills while everything else is prepared), then check the
        host's arch; a wrong arch stops the sampler and blocks every target."""
        starter, self._starter = self._starter, None
        if starter is not None:
            starter.result()  # started in the background: the first target waits here, and gets its error
        elif not self._started:
            self._start_now()

    def _start_now(self) -> None:
        self._started = True
        # on the host its facts (commands of their own) are read alongside the GPU library's start-up
        host = Background(lambda: read_container_facts(HostExecutor(), self.backend.vendor),
                          "gpuverify-host-facts") if self.options.container == "none" else None
        try:
            self._start_gpus()
        finally:
            if host is not None:  # off the first target's path: read while the window fills
                self.places.facts[HOST] = host.result()

    def _start_gpus(self) -> None:
        started = start_gpus(self.sampler, self.backend, self.options.window_s, self.expected_arch)
        self.host_arch, self._inventory = started.host_arch, started.inventory
        self.session_blocked.extend(started.blocked)
        self._session_notes.extend(started.notes)
        if not started.blocked:
            self._session_guard()  # started now, while the window fills: no target waits for it

    def start_in_background(self) -> None:
        """:meth:`start` in a thread: the GPU library's start-up (NVML, amdsmi: calls that let go of
        the GIL), the first readings and the arch check run while pytest collects."""
        if self._starter is None and not self._started:
            self._starter = Background(self._start_now, "gpuverify-start")

    def _session_guard(self) -> Optional[SessionGuard]:
        """The session's guard, started again if it died (a kill -9 of us stops our command)."""
        if self._guard is None or not self._guard.alive:
            self._guard = SessionGuard.start()
        return self._guard

    def close(self) -> list[TargetOutcome]:
        """Write every artifact; one that cannot be written is a line in ``write_problems``."""
        if self._starter is not None:
            self._starter.wait()
        self.sampler.stop()
        if self._guard is not None:
            self._guard.close()
        if self.base_worktrees is not None:  # before writing: the artifacts say whether it went
            multirun.remove_worktrees(self)
        for outcome in self.outcomes:
            try:
                self.write(outcome)
            except OSError as exc:
                self.write_problems.append(str(exc) if isinstance(exc, FileProblem) else
                                           f"cannot write {outcome.artifact_path}: {exc}")
        return self.outcomes

    def write(self, outcome: TargetOutcome) -> None:
        if outcome.written:
            return
        store_artifact(outcome.artifact, outcome.artifact_path, self._moves_lock)
        outcome.written = True
        if self.signer is not None:  # every file is final now: the artifact embeds the log's sha256
            runs_junit = [self.out_dir / r.junit_xml for r in outcome.artifact.runs if r.junit_xml]  # repeats
            sign_outputs(self.signer, [outcome.raw_path, outcome.junit_path, *runs_junit, outcome.artifact_path])

    # -- one target ------------------------------------------------------------------------
    def unique_topic(self, target: Target) -> str:
        return self.topics.claim(self.out_dir, self.options.topic or target.topic)

    def run(self, target: Target, grant: Optional[GpuGrant] = None) -> TargetOutcome:
        """Run one target and return its outcome (the artifact is written at :meth:`close`).
        ``grant``: GPUs the caller already holds (the ``locked_gpu`` fixture); kept, not released."""
        self.start()
        self._external_grant = grant
        topic = self.unique_topic(target)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        art = Artifact(
            plugin_version=__version__,
            key=self.options.ticket,
            topic=topic,
            ts=utc_now(),
            host=socket.gethostname(),
            target=target_record(target, multirun.repeats_for(self.options, target)),
            cold=self.options.cold,
            signed_by=self.signer.signer if self.signer else None, synced=self.synced,
            timeline=Timeline(collected=self.clock.wall(self._collected)),
        )
        art.notes.extend(self._session_notes)
        outcome = TargetOutcome(target, art, self.out_dir / f"bench_{topic}.json")
        self.outcomes.append(outcome)
        facts = RunFacts.for_target(target.kind, target.dtype)
        t0 = time.monotonic()
        parsed = None
        try:
            try:
                self._prepare_and_run(target, art, outcome, facts, stamp)
            finally:  # a pick started ahead of checks that failed: let go of it unused
                ahead, self._ahead = self._ahead, None
                if ahead is not None:
                    ahead.drop()
            if facts.ran and outcome.raw_path is not None:
                seal(outcome, facts)  # before parsing: check re-parses the log as sealed
                context = context_for(art.target, art.command, outcome.junit_path, facts.exit_code)
                parsed = parse_log(target.kind, outcome.raw_path, context)
        except Interrupted as exc:
            record_exec(facts, exc.outcome)
            finish(outcome, facts, None, t0)
            raise KeyboardInterrupt(exc.outcome.interrupted) from None
        except KeyboardInterrupt as exc:
            facts.interrupted = facts.interrupted or interrupt_cause(exc)
            if not facts.ran:
                facts.blocked.append("interrupted before the command started")
            finish(outcome, facts, None, t0)
            raise
        except Exception as exc:  # never lose the artifact to a bug of ours
            facts.blocked.append(f"internal error: {type(exc).__name__}: {exc}")
            art.notes.append("".join(traceback.format_exception(exc))[-2000:])
        finish(outcome, facts, parsed, t0)
        return outcome

    def _prepare_and_run(self, target: Target, art: Artifact, outcome: TargetOutcome, facts: RunFacts, stamp: str) -> None:
        if self.session_blocked:
            facts.blocked.extend(self.session_blocked)
            return
        if target.location is None:
            facts.blocked.append(f"target {target.name} names no file and no declaration to place it in a repo")
            return
        try:
            ws = locate(self.env, target.location, target.repo, target.path)
        except WorkspaceError as exc:
            facts.blocked.append(str(exc))
            return
        if self._external_grant is None and not self.builds_pending(target, ws.wt_host):
            # the lock is taken while the checks below run (pickahead.py)
            self._ahead = PickAhead(self.picker, target.gpus, self.options.wait_s)
        # read once per worktree, before any command of ours could have touched it
        if ws.wt_host not in self._repos:
            self._repos[ws.wt_host] = repo_state(ws.wt_host, own_output_dirs(self.env.resources.tickets))
        repo = self._repos[ws.wt_host]
        art.repos = [repo]
        if repo.dirty and not self.options.allow_dirty:
            shown = ", ".join(repo.dirty_paths[:5])
            facts.blocked.append(f"repo {repo.path} is dirty ({shown}). Fix: commit, or pass --gpu-allow-dirty")
            return
        if repo.dirty:
            art.notes.append(f"repo {repo.path} is dirty (allowed by --gpu-allow-dirty)")
        if self.options.container == "none":
            # the command runs on the host itself: the worktree is where it is
            art.container, on_host = None, str(ws.wt_host)
            cfacts = self.places.checked(HOST, art, facts)
            self._check_imports_and_run(target, art, outcome, facts, cfacts, on_host, ws, stamp)
            return
        res = self.places.resolve(ws, target)
        art.container = res.name
        art.notes.extend(res.notes)
        if not res.ok or not res.name:
            facts.blocked.append(res.problem or "no container")
            return
        wt = map_to_container(res.mounts, ws.wt_host)
        if wt is None:
            mounts = ", ".join(f"{h} -> {c}" for h, c in res.mounts) or "none"
            facts.blocked.append(
                f"worktree {ws.wt_host} is not mounted in container {res.name} (mounts: {mounts}). "
                "Fix: mount it, or correct the Repos row's path and mount"
            )
            return
        if res.fresh is not None:  # a `run` row: started once the GPUs are locked (prerun.py)
            return self._in_fresh_container(res, target, art, outcome, facts, wt, ws, stamp)
        cfacts = self.places.checked(res.name, art, facts)
        self._check_imports_and_run(target, art, outcome, facts, cfacts, wt, ws, stamp)

    def _check_imports_and_run(self, target, art, outcome, facts, cfacts, wt: str, ws, stamp: str) -> None:
        art.workdir = f"{wt}/{target.workdir}".rstrip("/.") if target.workdir not in (None, "", ".") else wt
        if cfacts is None or facts.blocked or not self._run_builds(target, art, facts, cfacts, wt, ws, stamp):
            return
        package = import_package(target.kind)
        pypath = pythonpath(target.kind, wt)
        if package:
            key = (cfacts.handle.name, wt, package)
            if key not in self._imports:
                self._imports[key] = import_origin(cfacts.handle, package, pypath)
            origin, why = self._imports[key]
            art.imports[package] = origin
            if not origin_inside(origin, wt):
                facts.blocked.append(
                    why or f"{package} imports from {origin}, outside the worktree {wt}/: "
                    "the run would test another checkout"
                )
                return
        plan = multirun.plan_for(self.options, self.base_worktrees, target, art, cfacts.handle, wt, ws.wt_host,
                                 facts.blocked)
        if self._run_base_builds(target, art, facts, cfacts, plan, ws, stamp):  # --gpu-ab: side A's builds
            self._run_on_gpu(target, art, outcome, facts, cfacts, wt, ws.rel_target, pypath, stamp, plan)

    def _run_on_gpu(self, target, art, outcome, facts, cfacts, wt, rel, pypath, stamp, plan=None) -> None:
        grant, ahead, self._ahead = self._external_grant, self._ahead, None
        timeline = art.timeline
        timeline.pick_started = timeline.pick_started or self.clock.wall(
            ahead.started if ahead is not None else time.monotonic())
        try:
            if grant is None:
                grant = ahead.grant() if ahead is not None else self.picker.acquire(count=target.gpus,
                                                                                    wait_s=self.options.wait_s)
        except (NoGpu, PickerError, LockError) as exc:  # LockError: the file, its owner and mode, the fix
            facts.blocked.append(str(exc))
            return
        timeline.lock_taken = self.clock.wall(grant.taken_at)
        run_id = f"{stamp}-{os.getpid()}"
        guards = None
        try:
            infos = [self._inventory.get(i, GpuInfo(index=i)) for i in grant.indices]
            art.gpus = gpu_records(infos, grant, self.backend.vendor, cfacts.arch)
            art.gpu = art.gpus[0]
            art.host_gpus = len(self._inventory) or None
            caches = plan_caches(wt, self.options.cold, run_id, on_host=cfacts.handle.name == HOST)
            art.cache_reused = warm_cache_reused(cfacts.handle, caches, self._warm_caches)
            run_env = RunEnvironment(
                visible_var=self.backend.visible_devices_var,
                visible_value=self._visible or self.backend.visible_value(infos),
                pythonpath=pypath,
                jit_dir=caches.jit_dir,
                arch=cfacts.arch,
                extra={k: v for k, v in caches.dirs.items() if k != "AITER_JIT_DIR"},
            )
            command_env = {**run_env.as_env(), **run_marker(run_id)}  # what it leaves is stopped: leftovers.py
            art.env = {**cfacts.container_env, **command_env}
            art.cache_dirs = dict(caches.dirs)
            argv = command_argv(target, rel, run_id)
            art.command = shlex.join(argv)
            outcome.raw_path = self.out_dir / f"bench_{art.topic}.{stamp}.log"
            art.raw_output = outcome.raw_path.name
            create_result_file(outcome.raw_path)
            facts.ran = True
            guards = RunGuards(self._session_guard(), grant.fds)
            live = None if self._on_running is None else RunningLine(
                self._on_running, f"{target.name} on {self.host_row.host} gpu {art.env.get(run_env.visible_var, '?')}")
            timeline.command_started = self.clock.wall(time.monotonic())  # no later than the real start
            try:
                on_start = self._parsers.on_start(target.kind, guards.on_start, self.sampler.publish_pending)
                if plan is not None:  # repeats or --gpu-ab: every run under this one lock (multirun.py)
                    result = multirun.run_planned(self, plan, target, art, cfacts.handle, wt, rel, run_env, command_env,
                                                  run_id, stamp, outcome.raw_path, running_echo(self._echo, live),
                                                  on_start)
                else:
                    result = cfacts.handle.stream_to_file(
                        argv, outcome.raw_path, env=command_env, workdir=art.workdir or wt,
                        timeout_s=self.options.timeout_s, echo=running_echo(self._echo, live), on_start=on_start,
                    )
            finally:
                timeline.command_ended = self.clock.wall(time.monotonic())  # no earlier than the real end
                if live is not None:
                    live.done()
            record_exec(facts, result)
        finally:
            if guards is not None:
                guards.done()
            if grant is not self._external_grant:
                self.picker.release(grant)
                timeline.lock_released = self.clock.wall(grant.released_at)
            if self.options.cold:
                remove_cold_caches(cfacts.handle, caches, art.notes)
        if target.kind in PYTEST_KINDS and plan is None:
            outcome.junit_path = fetch_junit(cfacts.handle, run_id, art, self.out_dir / f"bench_{art.topic}.{stamp}.junit.xml")



def echo_to_stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
