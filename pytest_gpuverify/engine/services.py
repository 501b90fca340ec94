"""What a target's run takes from its session: the facts fixed for the session (:class:`RunContext`,
frozen) and the services the targets share (:class:`SessionServices`: the GPU picker, the places,
the clock...). A run reads these and nothing else of the session, so the session module is the only
one that knows both sides."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pytest_gpuverify.common.clock import SessionClock
    from pytest_gpuverify.config.envfile import EnvFile, HostRow
    from pytest_gpuverify.config.options import RunOptions
    from pytest_gpuverify.config.signing import SigningRow
    from pytest_gpuverify.config.targets import Target
    from pytest_gpuverify.engine.prerun import DeclaredBuilds
    from pytest_gpuverify.gpu.base import GpuBackend, GpuInfo
    from pytest_gpuverify.lease.guard import SessionGuard
    from pytest_gpuverify.lease.picker import GpuPicker
    from pytest_gpuverify.lease.sampler import IdleSampler
    from pytest_gpuverify.parsers.warm import ParserWarmer
    from pytest_gpuverify.place.ab import BaseWorktrees
    from pytest_gpuverify.place.container_checks import ContainerPlaces
    from pytest_gpuverify.records.artifact import RepoRecord, SyncRecord
    from pytest_gpuverify.records.machine import MachineRecord
    from pytest_gpuverify.records.scheduling import SchedulerRecord, ShardRecord

Echo = Callable[[bytes], None]


@dataclass(frozen=True)
class RunContext:
    """The session's facts as a run starts: fixed for the run, whatever the session does meanwhile."""

    options: RunOptions
    env: EnvFile
    host_row: HostRow
    out_dir: Path
    signer: SigningRow | None
    synced: SyncRecord | None  # --gpu-sync's record, on a worker on a GPU host
    session_notes: tuple[str, ...]
    collected: float | None  # monotonic time pytest's collection ended
    echo: Echo | None  # -s: the command's output to the terminal as it comes
    shard: ShardRecord | None = None  # this session's shard of a run split over several jobs
    scheduler: SchedulerRecord | None = None  # GPUs granted outside the plugin
    machine: MachineRecord | None = None  # the machine's identity, read once per session


class LiveLine(Protocol):
    """The terminal's line while a command runs; fed the command's output as it comes."""

    def feed(self, data: bytes) -> None: ...

    def done(self) -> None: ...


LiveLineFactory = Callable[[str], LiveLine]  # a line for a label ("gemm on mi300 gpu 3")


class SessionServices(Protocol):
    """What the targets of one session share; each run uses them, none owns them."""

    @property
    def clock(self) -> SessionClock: ...
    @property
    def backend(self) -> GpuBackend: ...
    @property
    def picker(self) -> GpuPicker: ...
    @property
    def places(self) -> ContainerPlaces: ...
    @property
    def sampler(self) -> IdleSampler: ...
    @property
    def parsers(self) -> ParserWarmer: ...
    @property
    def builds(self) -> DeclaredBuilds: ...
    @property
    def base_worktrees(self) -> BaseWorktrees | None: ...
    @property
    def inventory(self) -> dict[int, GpuInfo]: ...
    @property
    def warm_caches(self) -> dict[str, bool]: ...
    @property
    def session_blocked(self) -> list[str]: ...
    @property
    def live_line(self) -> LiveLineFactory | None: ...

    def session_guard(self) -> SessionGuard | None: ...

    def unique_topic(self, target: Target) -> str: ...

    def visible_value(self, infos: list[GpuInfo]) -> str: ...

    def repo_state(self, wt_host: Path) -> RepoRecord: ...

    def import_origin(
        self,
        handle: Any,
        package: str,
        env: Mapping[str, str],
        tree: RepoRecord | None = None,
        front: tuple[str, ...] = (),
    ) -> tuple[str | None, str | None]: ...

    def imports_kept(self, handle: Any, env: Mapping[str, str]) -> list[str]: ...


def fan_out(echo: Echo | None, line: LiveLine | None) -> Echo | None:
    """The executors' ``echo``: the user's (-s), then the live line."""
    if line is None:
        return echo

    def both(data: bytes) -> None:
        if echo is not None:
            echo(data)
        line.feed(data)

    return both
