"""One target's run: the phases of phases.py, each returning its typed result; a phase that blocks the
target ends the run there, and the artifact is built from the results however it ended (an interrupt, an
internal error too). Usable without pytest; session.py runs one :class:`TargetRun` per target."""

from __future__ import annotations

import shlex
import socket
import time
import traceback
from datetime import UTC, datetime
from functools import partial

from pytest_gpuverify.common import live_files
from pytest_gpuverify.common.clock import STAMP_FORMAT
from pytest_gpuverify.common.files import create_result_file
from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.config.targets import (
    PYTEST_KINDS,
    RunEnvironment,
    Target,
    command_argv,
    junit_path,
    kept_from_place,
    multicast_off,
    pythonpath,
)
from pytest_gpuverify.engine import multirun
from pytest_gpuverify.engine.ab_caches import read_run
from pytest_gpuverify.engine.build_gpu import gpu_for_build
from pytest_gpuverify.engine.fresh_run import run_in_fresh_container
from pytest_gpuverify.engine.imports_seen import ImportProbe
from pytest_gpuverify.engine.outcome import (
    TargetOutcome,
    build_artifact,
    gpu_records,
    ran_in,
    run_record_of,
    target_record,
    timeline_of,
)
from pytest_gpuverify.engine.phases import Begun, Checked, Command, Decided, Executed, Leased, Placed, Results
from pytest_gpuverify.engine.runs_log import parse_log
from pytest_gpuverify.engine.services import RunContext, SessionServices, fan_out
from pytest_gpuverify.engine.trace_run import extra_runs, settle_trace
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.engine.watching import WatchedPlace
from pytest_gpuverify.execute.base import ON_HOST, Place
from pytest_gpuverify.execute.container import ExecOutcome, Interrupted, interrupt_cause
from pytest_gpuverify.execute.leftovers import run_id_of, run_marker
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.guard import RunGuards
from pytest_gpuverify.lease.lock import LockError
from pytest_gpuverify.lease.pickahead import PickAhead
from pytest_gpuverify.lease.picker import GpuGrant, NoGpu, PickerError
from pytest_gpuverify.parsers.reader import context_for
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.place.caches import plan_caches, remove_cold_caches
from pytest_gpuverify.place.facts_cache import kept_note
from pytest_gpuverify.place.import_rules import import_front
from pytest_gpuverify.place.packages import check_imports, checkout_copy, import_env, packages_under_test
from pytest_gpuverify.place.provenance import move_out
from pytest_gpuverify.place.resolve import map_to_container
from pytest_gpuverify.place.workspace import WorkspaceError, locate
from pytest_gpuverify.records.artifact import RunRecord, utc_now
from pytest_gpuverify.records.raw_log import seal_log


class TargetRun:
    def __init__(
        self, services: SessionServices, ctx: RunContext, target: Target, grant: GpuGrant | None = None
    ) -> None:
        s = self.s = services
        self.ctx = ctx
        self.target = target
        # GPUs held for the run by someone else: the caller's (the locked_gpu fixture), kept, not
        # released; during a `run` row's container, that lease's (the builds and the command use it)
        self.held = grant
        self.ahead: PickAhead | None = None  # a pick started in place, taken by lease (pickahead.py)
        # the pick's grant and start, when a `gpu = true` build took it before lease: the run owns it
        self.early: tuple[GpuGrant, float] | None = None
        self.visible: str | None = None  # the visible-devices value in a fresh container that renumbers
        self.command_ended_with: ExecOutcome | None = None  # the command's end, or what an interrupt carried
        self.interrupted: str | None = None  # an interrupt outside the command
        self.blocked: list[str] = []  # the run's own reasons: interrupted early, an internal error
        self.sealed = False
        self.outcome: TargetOutcome | None = None
        topic = s.unique_topic(target)
        self.results = Results(
            Begun(
                target=target,
                record=target_record(target, multirun.repeats_for(self.ctx.options, target)),
                topic=topic,
                stamp=datetime.now(UTC).strftime(STAMP_FORMAT),
                ts=utc_now(),
                t0=time.monotonic(),
                host=socket.gethostname(),
                artifact_path=self.ctx.out_dir / f"bench_{topic}.json",
                notes=list(self.ctx.session_notes),
                key=self.ctx.options.ticket,
                cold=self.ctx.options.cold,
                signed_by=self.ctx.signer.signer if self.ctx.signer else None,
                synced=self.ctx.synced,
                collected=s.clock.wall(self.ctx.collected),
                shard=self.ctx.shard,
                scheduler=self.ctx.scheduler,
                machine=self.ctx.machine,
            )
        )

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> TargetOutcome:
        """Every phase, then the artifact; an interrupt still gets its artifact, then goes on up."""
        parsed = None
        try:
            try:
                self._phases()
            finally:  # a pick started ahead of checks that failed: let go of it unused
                ahead, self.ahead, early, self.early = self.ahead, None, self.early, None
                if ahead is not None:
                    ahead.drop()
                if early is not None:  # a build used it, then the checks failed: lease never took it
                    self.s.picker.release(early[0])
            parsed = self.parse()
        except Interrupted as exc:
            self.command_ended_with = exc.outcome
            raise KeyboardInterrupt(exc.outcome.interrupted) from None
        except KeyboardInterrupt as exc:
            self.interrupted = interrupt_cause(exc)
            if not self.ran:
                self.blocked.append("interrupted before the command started")
            raise
        except Exception as exc:  # never lose the artifact to a bug of ours
            self.blocked.append(f"internal error: {type(exc).__name__}: {exc}")
            self.results.notes.append("".join(traceback.format_exception(exc))[-2000:])
        finally:
            self.outcome = self.decide(parsed)
        return self.outcome

    def _phases(self) -> None:
        placed = self.place()
        if placed.blocked:
            return
        if placed.fresh is not None:
            return run_in_fresh_container(self, placed)
        checked = self.check(placed, placed.where or ON_HOST)
        if checked.blocked:
            return
        leased = self.lease()
        if not leased.blocked:
            self.execute(placed, checked, leased, release=True)

    @property
    def ran(self) -> bool:
        return self.results.executed is not None and self.results.executed.ran

    # -- place ------------------------------------------------------------------------------
    def place(self) -> Placed:
        """The target's worktree and repo state, and where its command runs; its pick starts here."""
        s, target = self.s, self.target
        placed = self.results.placed = Placed()
        if s.session_blocked:
            placed.blocked.extend(s.session_blocked)
            return placed
        if target.location is None:
            placed.blocked.append(f"target {target.name} names no file and no declaration to place it in a repo")
            return placed
        try:
            with PROFILE.phase("worktree located"):
                ws = placed.ws = locate(self.ctx.env, target.location, target.repo, target.path)
        except WorkspaceError as exc:
            placed.blocked.append(str(exc))
            return placed
        if self.held is None and not s.builds.pending(target, ws.wt_host):
            self.ahead = PickAhead(s.picker, target.gpus, self.ctx.options.wait_s)  # locks while the checks run
        repo = placed.repo = s.repo_state(ws.wt_host)
        if repo.dirty and not self.ctx.options.allow_dirty:
            shown = ", ".join(repo.dirty_paths[:5])
            placed.blocked.append(f"repo {repo.path} is dirty ({shown}). Fix: commit, or pass --gpu-allow-dirty")
            return placed
        if repo.dirty:
            placed.notes.append(f"repo {repo.path} is dirty (allowed by --gpu-allow-dirty)")
        if s.places.on_host:  # the command runs on the host itself: the worktree is where it is
            placed.where, placed.wt = ON_HOST, str(ws.wt_host)
            return placed
        with PROFILE.phase("container resolved"):
            res = s.places.resolve(ws, target)
        placed.container = res.name
        placed.notes.extend(res.notes)
        if not res.ok or not res.name:
            placed.blocked.append(res.problem or "no container")
            return placed
        placed.wt = map_to_container(res.mounts, ws.wt_host)
        if placed.wt is None:
            mounts = ", ".join(f"{h} -> {c}" for h, c in res.mounts) or "none"
            placed.blocked.append(
                f"worktree {ws.wt_host} is not mounted in container {res.name} (mounts: {mounts}). "
                "Fix: mount it, or correct the Repos row's path and mount"
            )
            return placed
        placed.where = Place(res.name)
        placed.fresh = res if res.fresh is not None else None
        return placed

    # -- check ------------------------------------------------------------------------------
    def check(self, placed: Placed, where: Place) -> Checked:
        """May it run at ``where``: arch and versions, the declared builds, the imports, the plan."""
        s, target, stamp = self.s, self.target, self.results.begun.stamp
        assert placed.ws is not None and placed.wt is not None  # place blocks without them
        ws, wt = placed.ws, placed.wt
        workdir = f"{wt}/{target.workdir}".rstrip("/.") if target.workdir not in (None, "", ".") else wt
        checked = self.results.checked = Checked(workdir=workdir)
        with PROFILE.phase("container facts"):
            checked.place = s.places.checked(where)
        checked.blocked.extend(checked.place.blocked)
        place = checked.place.facts
        if place is None or checked.blocked:
            return checked
        side = "B" if s.base_worktrees is not None else None  # --gpu-ab: these build the head's worktree
        if not s.builds.run(
            target,
            place,
            wt,
            ws.wt_host,
            ws.wt_host,
            side,
            stamp,
            partial(gpu_for_build, self),
            checked,
            self.ctx.options.allow_dirty,
        ):
            return checked
        under = checked.under = packages_under_test(target, ws.wt_host)
        env = import_env(target, wt, place)
        front = import_front(target, ws.wt_host, wt, workdir, env["PYTHONPATH"].split(":"))
        checked.front, checked.checkout = (
            front.dirs,
            {p: checkout_copy(p, ws.wt_host, wt, front.dirs) for p in under.names},
        )
        # the worktree as read before any command: an earlier session's answer for the same state may be
        # taken, unless this target's declared builds ran and may have changed it
        tree = placed.repo if not checked.builds else None
        imports = check_imports(
            under, wt, env, partial(s.import_origin, place.handle, tree=tree, front=tuple(front.dirs)), observe=True
        )  # the run's own record decides (imports_seen.py)
        checked.imports, checked.notes = imports.imports, imports.notes + front.problems
        checked.probe = ImportProbe(place, under, run_id_of(stamp))
        kept = s.imports_kept(place.handle, env)
        if place.cached or kept:
            checked.notes.append(kept_note(where, place.cached, kept))
        if imports.blocked:
            checked.blocked.extend(imports.blocked)
            return checked
        multirun.plan_for(
            self.ctx.options,
            s.base_worktrees,
            target,
            place,
            wt,
            ws.wt_host,
            placed.repo.sha if placed.repo else None,
            checked,
            under,
            partial(s.import_origin, place.handle),
        )
        plan = checked.plan
        if not checked.blocked and plan is not None and plan.base is not None and plan.base_wt is not None:
            # --gpu-ab: the same builds on the base worktree (side A) before the first run
            s.builds.run(
                target,
                place,
                plan.base_wt,
                ws.wt_host,
                plan.base.path,
                "A",
                stamp,
                partial(gpu_for_build, self),
                checked,
                self.ctx.options.allow_dirty,
            )
        return checked

    # -- lease ------------------------------------------------------------------------------
    def lease(self) -> Leased:
        """The target's GPUs: the caller's, the pick started in place, or a pick made now."""
        s = self.s
        ahead, self.ahead, early, self.early = self.ahead, None, self.early, None
        started = early[1] if early is not None else ahead.started if ahead is not None else time.monotonic()
        leased = self.results.leased = Leased(pick_started=s.clock.wall(started))
        try:
            with PROFILE.phase("GPU picked and locked (the wait)"):
                grant = self.held or (
                    early[0]
                    if early is not None
                    else ahead.grant()
                    if ahead is not None
                    else s.picker.acquire(count=self.target.gpus, wait_s=self.ctx.options.wait_s)
                )
        except (NoGpu, PickerError, LockError) as exc:  # LockError: the file, its owner and mode, the fix
            leased.blocked.append(str(exc))
            return leased
        leased.grant, leased.owned = grant, grant is not self.held
        leased.lock_taken = s.clock.wall(grant.taken_at)
        return leased

    def release(self, leased: Leased) -> None:
        if leased.owned and leased.grant is not None:
            self.s.picker.release(leased.grant)
            leased.lock_released = self.s.clock.wall(leased.grant.released_at)

    # -- execute ----------------------------------------------------------------------------
    def execute(self, placed: Placed, checked: Checked, leased: Leased, release: bool) -> Executed:
        """The command (or the plan's runs) on the leased GPUs into the raw log; ``release``: let go
        of the GPUs once it ended (a `run` row lets go after its container is removed)."""
        s, target, begun = self.s, self.target, self.results.begun
        assert checked.place is not None and checked.place.facts is not None and leased.grant is not None
        assert placed.wt is not None and placed.ws is not None
        place, grant, wt = checked.place.facts, leased.grant, placed.wt
        handle = watched = WatchedPlace(place.handle, s.backend, list(grant.indices), s.clock.wall)
        executed = self.results.executed = Executed()
        run_id = run_id_of(begun.stamp)
        guards = caches = None
        try:
            infos = [s.inventory.get(i, GpuInfo(index=i)) for i in grant.indices]
            executed.gpus = gpu_records(infos, grant, s.backend.vendor, place.arch)
            executed.host_gpus = len(s.inventory) or None
            caches = plan_caches(wt, self.ctx.options.cold, run_id, target.kind, on_host=handle.place.on_host)
            watched.probe_caches(caches, s.warm_caches)  # looked into by the command's own start
            run_env = RunEnvironment(
                visible_var=s.backend.visible_devices_var,
                visible_value=self.visible or s.visible_value(infos),
                pythonpath=pythonpath(target.kind, wt, place.pythonpath),
                kind=target.kind,
                arch=place.arch,
                caches=dict(caches.dirs),
                declared=dict(target.env),
                kept=kept_from_place(place.container_env),
                multicast=multicast_off(s.backend.vendor, place.container_env),
            )
            probe = checked.probe or ImportProbe(place, None, run_id)  # where it really imports from: imports_seen.py
            command_env = {**run_env.as_env(), **run_marker(run_id), **probe.env(run_env.pythonpath)}  # leftovers.py
            executed.env = {**place.container_env, **command_env}
            executed.cache_dirs = dict(caches.dirs)
            argv = command_argv(target, placed.ws.rel_target, run_id)
            executed.command = shlex.join(argv)
            raw = executed.raw_path = self.ctx.out_dir / f"bench_{begun.topic}.{begun.stamp}.log"
            create_result_file(raw)
            live_files.hold(raw)  # until its artifact is written: `check DIR` tells this run from a stopped one
            executed.ran = True
            guards = RunGuards(s.session_guard(), grant.fds)
            live = (
                None
                if s.live_line is None
                else s.live_line(
                    f"{target.name} on {self.ctx.host_row.host} gpu {executed.env.get(run_env.visible_var, '?')}"
                )
            )
            started = time.monotonic()
            executed.command_started = s.clock.wall(started)  # no later than the real start
            try:
                cmd = Command(
                    target,
                    handle,
                    argv,
                    placed.ws.rel_target,
                    run_id,
                    run_env,
                    command_env,
                    wt,
                    checked.workdir,
                    raw,
                    begun.topic,
                    begun.stamp,
                    self.ctx.options.timeout_s,
                    self.ctx.options.cold,
                    fan_out(self.ctx.echo, live),
                    s.parsers.on_start(target.kind, guards.on_start, s.sampler.publish_pending),
                )
                if checked.plan is not None:  # repeats or --gpu-ab: every run under this one lock (multirun.py)
                    self.command_ended_with = multirun.run_planned(checked.plan, cmd, executed)
                else:
                    epoch = time.time()
                    self.command_ended_with = handle.stream_to_file(
                        cmd.argv,
                        raw,
                        env=cmd.env,
                        workdir=cmd.workdir,
                        timeout_s=cmd.timeout_s,
                        echo=cmd.echo,
                        on_start=cmd.on_start,
                    )
                    probe.read_soon()  # alongside the Triton cache's read and the watch's last look
                    executed.autotune_reads.append((None, None, read_run(handle, target.kind, caches.dirs, epoch)))
            finally:
                ended = time.monotonic()
                executed.command_ended = s.clock.wall(ended)  # no earlier than the real end
                PROFILE.add("command (the target's own)", started, ended)
                executed.watch = watched.labelled(executed.runs)
                executed.cache_reused = watched.caches_reused()
                if live is not None:
                    live.done()
            if self.ctx.options.trace or self.ctx.options.profile:  # after the timed runs, under the same lock
                with PROFILE.phase("trace and profile runs"):
                    extra_runs(self.ctx.options, s.backend.vendor, cmd, executed, place.handle)
        finally:
            if guards is not None:
                guards.done()
            if release:
                self.release(leased)
            if self.ctx.options.cold and caches is not None:
                remove_cold_caches(handle, caches, executed.notes)
        if checked.probe is not None:
            executed.imports_seen = checked.probe.settle(
                checked.imports, checked.front, checked.checkout, wt, executed.ran
            )
        if target.kind in PYTEST_KINDS and checked.plan is None:  # the inner pytest's report, beside the log
            with PROFILE.phase("JUnit report moved out"):
                executed.junit_path, note = move_out(
                    handle, junit_path(run_id), self.ctx.out_dir / f"bench_{begun.topic}.{begun.stamp}.junit.xml"
                )
            if note:
                executed.notes.append(note)
        return executed

    # -- parse and decide -------------------------------------------------------------------
    def parse(self) -> ParsedOutput | None:
        """The raw log, sealed first (check re-parses it as sealed), read by the kind's parser."""
        executed = self.results.executed
        if executed is None or not executed.ran or executed.raw_path is None:
            return None
        record = self.run_record(output_parsed=False)
        self._seal(record)
        context = context_for(self.results.begun.record, executed.command, executed.junit_path, record.exit_code)
        with PROFILE.phase("raw log parsed"):
            parsed = parse_log(self.target.kind, executed.raw_path, context)
        settle_trace(executed, self.ctx.out_dir, parsed.perf)
        return parsed

    def run_record(self, output_parsed: bool) -> RunRecord:
        """What happened around the command, from the phases' results: the record the verdict reads."""
        return run_record_of(
            self.results, self.command_ended_with, self.blocked, self.interrupted, self.ran, output_parsed
        )

    def decide(self, parsed: ParsedOutput | None) -> TargetOutcome:
        """The verdict from the run record and the parse; the log sealed; the artifact built."""
        r = self.results
        if r.checked is not None and r.checked.place is not None:
            r.checked.place.settle(ran=self.ran)
        if (
            r.executed is not None
            and r.executed.imports_seen is None
            and r.checked is not None
            and r.checked.probe
            and r.placed is not None
            and r.placed.wt is not None
        ):  # interrupted: the prediction, said as such
            r.executed.imports_seen = r.checked.probe.settle(
                r.checked.imports, r.checked.front, r.checked.checkout, r.placed.wt, self.ran, read=False
            )
        raw = r.executed.raw_path if r.executed is not None else None
        if self.ran and raw is not None and raw.exists():  # first: a log that cannot be sealed is a reason
            self._seal(self.run_record(output_parsed=parsed is not None))
        record = self.run_record(output_parsed=parsed is not None)
        with PROFILE.phase("verdict and artifact built"):
            verdict, reasons = verdict_and_reasons(record, parsed, self.target.thresholds, r.begun.record)
            r.decided = Decided(record, verdict, reasons, parsed)
            artifact = build_artifact(r)
        return TargetOutcome(
            self.target,
            artifact,
            r.begun.artifact_path,
            raw_path=raw,
            junit_path=r.executed.junit_path if r.executed is not None else None,
        )

    def _seal(self, record: RunRecord) -> None:
        """The raw log's trailer, once (records/raw_log.py): the record's exit facts, where, when, and its watch."""
        executed = self.results.executed
        if self.sealed or executed is None or executed.raw_path is None:
            return
        self.sealed = True  # tried once: a failure is the run's reason, not retried
        try:
            with PROFILE.phase("raw log sealed"):
                seal_log(
                    executed.raw_path,
                    record,
                    self.results.begun.host,
                    ran_in(self.results),
                    [g.index for g in executed.gpus],
                    timeline_of(self.results).model_dump(),
                    executed.watch,
                    self.results.begun.machine,
                )
        except OSError as exc:  # a full disk: the artifact is still written, and not a PASS
            self.blocked.append(
                f"the raw log {executed.raw_path} could not be sealed ({exc}): `gpuverify check` cannot verify it"
            )
