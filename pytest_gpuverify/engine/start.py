"""A session's start: what it sets up before its first target, and starts while the rest loads.

The setup checked (every setup problem raises here, before any GPU or container is touched), the
GPU backend, the idle window, the picker, the places, the session's guard, and the GPUs granted by
a scheduler. Its modules are few: the plugin builds it first and starts it in a thread (the GPU
library's start-up, the first readings, the arch) before it imports the run side of the engine
(engine/session.py and what a target's run needs), so that import and the start overlap.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pytest_gpuverify.common.files import private_folder
from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.common.threads import Background
from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.engine.setup_checks import check_setup
from pytest_gpuverify.execute.base import ON_HOST
from pytest_gpuverify.execute.container import docker_client
from pytest_gpuverify.execute.host import HostExecutor
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu import select_backend
from pytest_gpuverify.gpu.base import GpuInfo
from pytest_gpuverify.lease.cgroup_devices import check_grant, gpu_device_files
from pytest_gpuverify.lease.grants import GrantProblem, granted_text, granter, read_grant
from pytest_gpuverify.lease.guard import SessionGuard
from pytest_gpuverify.lease.picker import GpuPicker
from pytest_gpuverify.lease.sampler import IdleSampler, sampling_interval
from pytest_gpuverify.lease.shared_readings import readings_for
from pytest_gpuverify.lease.window_history import history_source
from pytest_gpuverify.place.container_checks import ContainerPlaces, GpuStart, start_gpus
from pytest_gpuverify.place.machine import read_machine
from pytest_gpuverify.place.provenance import read_container_facts
from pytest_gpuverify.records.machine import MachineRecord
from pytest_gpuverify.records.scheduling import SchedulerRecord


class SessionStart:
    def __init__(
        self,
        options: RunOptions,
        env: EnvFile,
        docker_factory: Callable[[], object] = docker_client,
        on_wait: Callable[[str], None] | None = None,
        health: Callable[[], tuple[dict[str, str], str | None]] | None = None,
    ) -> None:
        """``health``: the GPUs (by UUID) a history store judged unhealthy, with why, and a line when it could
        not be read; called once, as the GPUs are known (the face reads the store: the engine knows none)."""
        self.options, self.env, self.on_wait = options, env, on_wait
        self.health = health
        self.setup = setup = check_setup(options, env)  # raises before any GPU or container is touched
        self.runner = LocalHost()
        self.backend = select_backend(setup.expected_arch, self.runner)
        interval = sampling_interval(options.window_s)  # the pick's window needs its readings, whatever they cost
        shared = readings_for(setup.host_row.host, setup.lock_spec.path_template, interval)
        self.sampler = IdleSampler(
            self.backend,
            options.window_s,
            interval_s=interval,
            lock_path_for=setup.lock_spec.path_for,
            shared=shared,
            history=history_source(
                self.backend, shared.path, setup.expected_arch, setup.lock_spec.path_template, interval
            ),
        )
        self.picker = GpuPicker(
            self.sampler, setup.lock_spec, self.runner, setup.picker_command, on_wait=on_wait, where=setup.host_row.host
        )
        self.places = ContainerPlaces(
            env, options, setup.host_row.host, docker_factory, self.backend.vendor, setup.expected_arch
        )
        self.inventory: dict[int, GpuInfo] = {}
        self.blocked: list[str] = []  # every target of the session is blocked by these
        self.notes: list[str] = []  # said in every artifact of the session
        self.scheduler: SchedulerRecord | None = None  # GPUs granted outside the plugin (grants.py)
        self.machine: MachineRecord | None = None  # the machine's identity, in every artifact (place/machine.py)
        own = private_folder()
        if own.squatted:  # said in every artifact: the caches and locks of this session were its own
            self.notes.append(
                f"{own.squatted}: this session's own files (caches of runs on the host, the "
                f"lock of artifact moves without a ticket) were in a fresh folder {own.path}"
            )
        self._started = False
        self._starter: Background | None = None  # begin()'s thread
        self._guard: SessionGuard | None = None

    def begin(self) -> None:
        """The start in a thread: the GPU library's start-up (NVML, amdsmi: calls that let go of the
        GIL), the first readings and the arch check run while the plugin loads the rest and pytest
        collects."""
        if self._starter is None and not self._started:
            self._starter = Background(self._start_now, "gpuverify-start")

    def wait(self) -> None:
        """The start over (begun in a thread, or done now); its error, if it raised, raises here."""
        starter, self._starter = self._starter, None
        if starter is not None:
            with PROFILE.phase("wait for the session's start"):
                starter.result()  # the first target waits here, and gets its error
        elif not self._started:
            self._start_now()

    def _start_now(self) -> None:
        """Start the idle window first (it fills while everything else is prepared), then check the
        host's arch; a wrong arch stops the sampler and blocks every target."""
        self._started = True
        self.places.start_client()  # joined by the first target's place phase, which waits for this start
        # on the host its facts (commands of their own) are read alongside the GPU library's start-up
        host = Background(self._host_facts, "gpuverify-host-facts") if self.places.on_host else None
        started = None
        try:
            started = self._start_gpus()
            # once the GPU list is read: the identity's calls use the library the start loaded
            self.machine = read_machine(self.backend, list(self.inventory.values()), self.places.cache)
        finally:
            if host is not None:  # off the first target's path: read while the window fills
                facts = self.places.facts[ON_HOST] = host.result()
                # the host's GPUs are the place's: their arch, as the GPU start read it
                facts.arch = started.host_arch if started is not None else None
                facts.arch_problem = None if facts.arch else "the host's arch was not read"

    def _host_facts(self):
        with PROFILE.phase("host facts"):
            return read_container_facts(HostExecutor(), self.backend.vendor, read_arch=False)

    def _start_gpus(self) -> GpuStart:
        with PROFILE.phase("GPU start (library, window, arch)"):
            started = start_gpus(self.sampler, self.backend, self.options.window_s, self.setup.expected_arch)
        self.inventory = started.inventory
        self.blocked.extend(started.blocked)
        self.notes.extend(started.notes)
        if not started.blocked:
            self._read_grant()
            self._skip_unhealthy()
            self.session_guard()  # started now, while the window fills: no target waits for it
        return started

    def _read_grant(self) -> None:
        """GPUs a scheduler or CI job granted this process: the picker picks only among them."""
        uuids = {g.uuid: g.index for g in self.inventory.values() if g.uuid}
        try:
            self.scheduler = read_grant(
                os.environ,
                self.backend.vendor,
                uuids,
                on_host=self.places.on_host,
                host_gpus=len(self.inventory) or None,
            )
        except GrantProblem as exc:
            self.blocked.append(str(exc))
            return
        if self.scheduler is not None:
            cgroup = ""
            if self.scheduler.kind == "slurm":  # ConstrainDevices: the job's cgroup lists what it may open
                devices = gpu_device_files(self.scheduler.granted, self.backend.vendor)
                check = check_grant(self.scheduler.granted, devices, granter(self.scheduler))
                if check.refused:
                    self.blocked.append(check.refused)
                    return
                cgroup = f"; {check.said}"
            self.picker.granted = list(self.scheduler.granted)
            self.picker.granted_by = granter(self.scheduler)
            self.notes.append(
                f"GPUs granted outside the plugin: {granted_text(self.scheduler)}; picked and locked among these "
                f"only{cgroup}"
            )

    def _skip_unhealthy(self) -> None:
        """The GPUs the history judged unhealthy, by their index here: the picker skips them; said in each artifact."""
        if self.health is None:
            return
        bad, problem = self.health()
        if problem:
            self.notes.append(problem)
        skipped = {g.index: bad[g.uuid] for g in self.inventory.values() if g.uuid and g.uuid in bad}
        self.picker.unhealthy = skipped
        for index, why in sorted(skipped.items()):
            self.notes.append(f"gpu {index} skipped by the picker for its health: {why}")

    def session_guard(self) -> SessionGuard | None:
        """The session's guard, started again if it died (a kill -9 of us stops our command)."""
        if self._guard is None or not self._guard.alive:
            self._guard = SessionGuard.start()
        return self._guard

    def stop(self) -> None:
        """At the session's end: the start's thread over, the sampler and the guard stopped."""
        if self._starter is not None:
            self._starter.wait()
        with PROFILE.phase("sampler and guard stopped"):
            self.sampler.stop()
            if self._guard is not None:
                self._guard.close()
