"""Where a session's targets run, and their checks of it: the Docker client, each worktree's container
(resolve.py, once per repo and worktree) and each container's facts (arch, versions: read once,
provenance.read_container_facts), then per target that it is there and running and has the arch the
run needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.common.threads import Background
from pytest_gpuverify.execute.base import ON_HOST, Place
from pytest_gpuverify.execute.container import ContainerError, ContainerExecutor
from pytest_gpuverify.execute.host import HostExecutor
from pytest_gpuverify.gpu.base import GpuInfo, GpuToolError
from pytest_gpuverify.place.facts_cache import FactsCache, cached_container_facts, container_identity, remember_facts
from pytest_gpuverify.place.provenance import ContainerFacts, read_container_facts
from pytest_gpuverify.records.artifact import Versions

HOST = ON_HOST  # --gpu-container none: the host itself


@dataclass
class ContainerCheck:
    """One target's check of where it runs (the check phase, engine/run.py): what the artifact records
    of the place (image, versions, the versions that could not be read) and why the target may not
    run there. ``facts`` is None when the place could not be read at all."""

    place: Place
    facts: ContainerFacts | None = None
    image: str | None = None
    image_digest: str | None = None
    blocked: list[str] = field(default_factory=list)
    recorded: tuple[Versions, list[str]] | None = None  # the versions this target records (settle)

    def settle(self, ran: bool) -> None:
        """The versions this target's artifact records, read once the run is over: their read may
        still be under way while the command runs, and is waited for then; a run that ended before
        its command does not wait for it (an interrupt ends at once)."""
        if self.facts is not None and self.recorded is None:
            self.recorded = self.facts.versions_read(wait=ran)

    @property
    def versions(self) -> Versions | None:
        self.settle(ran=True)
        return self.recorded[0] if self.recorded is not None else None

    @property
    def unknowns(self) -> list[str]:
        """The versions recorded as null, and why."""
        self.settle(ran=True)
        return list(self.recorded[1]) if self.recorded is not None else []


def check_container(cfacts: ContainerFacts, place: Place, expected_arch: str | None) -> ContainerCheck:
    """The place's record; its ``blocked`` says why the target may not run there."""
    check = ContainerCheck(place)
    name = place.name
    try:
        running = cfacts.handle.running
        check.image = cfacts.handle.image
        check.image_digest = None if place.on_host else cfacts.handle.inspect().get("Image")
    except ContainerError as exc:
        check.blocked.append(f"missing container: {exc}")
        return check
    if not running:
        check.blocked.append(
            f"container {name} is not running. Fix: `docker start {name}`, or pass --gpu-start-container"
        )
        return check
    check.facts = cfacts
    if cfacts.arch_problem:
        check.blocked.append(cfacts.arch_problem)
    elif expected_arch and cfacts.arch != expected_arch:
        check.blocked.append(f"wrong arch in {place}: it is {cfacts.arch}, the run needs {expected_arch}")
    return check


class ContainerPlaces:
    """The session's containers: resolved, read and checked once each, kept for its later targets."""

    def __init__(
        self, env, options, host_name: str, docker_factory: Callable[[], object], vendor: str, expected_arch: str | None
    ) -> None:
        self.env, self.options, self.host_name, self.vendor = env, options, host_name, vendor
        self.expected_arch = expected_arch
        self._docker_factory = docker_factory
        self._docker: object | None = None
        self._docker_pending: Any | None = None  # the Background making the client (start_client)
        self._resolutions: dict[tuple[str, str], object] = {}
        self.facts: dict[Place, ContainerFacts] = {}
        self.cache = FactsCache()  # what earlier sessions read of the same container starts

    @property
    def on_host(self) -> bool:
        """``--gpu-container none``: commands run on the host itself (decided here, and only here)."""
        from pytest_gpuverify.config.containers import runs_on_host

        return runs_on_host(self.options.container)

    def start_client(self) -> None:
        """Make the Docker client in a thread, at the session's start: the SDK's import (requests,
        urllib3: 0.15 s of CPU) and the API version call run while pytest collects, not on the
        first target's path. A failure surfaces at :meth:`client`, where it did before."""
        from pytest_gpuverify.common.threads import Background

        if self._docker is None and self._docker_pending is None and not self.on_host:
            self._docker_pending = Background(self._timed_client, "gpuverify-docker-client")

    def _timed_client(self):
        from pytest_gpuverify.common.profile import PROFILE

        with PROFILE.phase("Docker client made"):
            return self._docker_factory()

    def client(self):
        if self._docker is None:
            pending, self._docker_pending = self._docker_pending, None
            self._docker = pending.result() if pending is not None else self._docker_factory()
        return self._docker

    def resolve(self, ws, target):
        from pytest_gpuverify.place.resolve import resolve_container

        key = (ws.repo.repo, str(ws.wt_host))
        if key not in self._resolutions:
            self._resolutions[key] = resolve_container(
                self.env,
                ticket=self.options.ticket,
                repo_row=ws.repo,
                target_path=target.location,
                docker_client=self.client(),
                override=self.options.container,
                allow_start=self.options.start_container,
                host_name=self.host_name,
            )
        return self._resolutions[key]

    def checked(self, place: Place) -> ContainerCheck:
        """The place's facts, read once (or kept from an earlier session of the same container start:
        facts_cache.py), checked for this target (:func:`check_container`)."""
        if place not in self.facts:
            handle = HostExecutor() if place.container is None else ContainerExecutor(self.client(), place.container)
            facts = None if place.on_host else cached_container_facts(self.cache, handle, self.vendor)
            if facts is None:
                identity = None if place.on_host else _identity(handle)
                facts = read_container_facts(handle, self.vendor)
                facts.identity = identity
            self.facts[place] = facts
        return check_container(self.facts[place], place, self.expected_arch)

    def remember(self) -> None:
        """Keep the facts read in full this session for the next sessions (at the session's end)."""
        for name, facts in self.facts.items():
            if name != HOST:
                remember_facts(self.cache, facts, self.vendor)


def _identity(handle) -> list | None:
    try:
        return container_identity(handle.inspect())
    except ContainerError:
        return None


@dataclass
class GpuStart:
    """What a session's start learnt of the host's GPUs; ``blocked`` stops every target."""

    host_arch: str | None = None
    inventory: dict[int, GpuInfo] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def start_gpus(sampler, backend, window_s: float, expected_arch: str | None) -> GpuStart:
    """Start the idle window first (it fills while the rest is read), then check the host's arch; a
    wrong or unreadable arch stops the sampler. The arch (rocminfo on ROCm, a process of its own) is
    read alongside the first readings."""
    arch = Background(backend.host_arch, "gpuverify-host-arch")
    with PROFILE.phase("idle window started (first reading)"):
        sampler.start()
    started = GpuStart()
    if sampler.window_note:
        started.notes.append(f"the first pick sampled a {window_s:g} s window: {sampler.window_note}")
    try:
        started.host_arch = arch.result()
        why = "no GPU found"
    except GpuToolError as exc:
        why = str(exc)
    if started.host_arch is None:
        started.blocked.append(f"cannot read the host's arch: {why}")
    elif expected_arch and started.host_arch != expected_arch:
        started.blocked.append(f"wrong arch on host: it is {started.host_arch}, the run needs {expected_arch}")
    if started.blocked:
        sampler.stop()
        return started
    try:
        with PROFILE.phase("GPU list read"):
            started.inventory = {g.index: g for g in backend.inventory()}
    except GpuToolError as exc:
        started.notes.append(f"GPU names unknown: {exc}")
    return started
