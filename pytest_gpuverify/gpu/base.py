"""Backend-neutral GPU facts. A backend turns tool output into these; the sampler judges them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class GpuToolError(RuntimeError):
    """A GPU tool could not be run or printed nothing usable. The message names the tool and why."""


class CallTimedOut(GpuToolError):
    """An in-process library call gave no answer in time (it runs on, in its thread)."""


def call_within(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """``fn()`` in a daemon thread, waited for ``timeout_s``. An in-process library call (NVML,
    amdsmi) cannot be interrupted: a hung driver would hang the sampler and the re-check under the
    lock. Past the time this raises :class:`CallTimedOut`, and the caller goes over to the tools,
    which it can time out; the hung thread is left behind."""
    result: list = []

    def work() -> None:
        try:
            result.append((True, fn()))
        except BaseException as exc:  # handed to the caller's thread
            result.append((False, exc))

    worker = threading.Thread(target=work, name=f"gpuverify-{what}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not result:
        raise CallTimedOut(f"{what}: no answer within {timeout_s:g} s")
    ok, value = result[0]
    if not ok:
        raise value
    return value


def output_tail(res, width: int = 160) -> str:
    """``; stderr: <its last line>; stdout: <its start>`` of a tool's result, for an error message."""
    err = res.stderr.decode("utf-8", errors="replace").strip().splitlines()
    out = " ".join(res.text().split())[:width]
    return (f"; stderr: {err[-1][:200]}" if err else "") + (f"; stdout: {out!r}" if out else "; stdout empty")


class GpuProcess(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    pid: int
    name: str = ""
    vram_bytes: int | None = None  # None: the tool could not say (UNKNOWN / N/A)


class GpuReading(BaseModel):
    """One instant of one GPU. ``index`` is the index the command's visibility variable uses
    (HIP index on ROCm, NVML index on NVIDIA). ``None`` fields mean the tool did not report them."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    use_pct: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    processes: tuple[GpuProcess, ...] = ()


class GpuInfo(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    arch: str | None = None
    name: str | None = None
    uuid: str | None = None


class GpuBackend(Protocol):
    """What the sampler, picker and doctor need from a vendor backend."""

    vendor: str  # "rocm" | "nvidia"
    visible_devices_var: str  # HIP_VISIBLE_DEVICES | CUDA_VISIBLE_DEVICES

    def read(self) -> list[GpuReading]:
        """One reading of every GPU. Raises GpuToolError when no tool gives a usable answer."""
        ...

    def reading_source(self) -> str:
        """Where the readings come from now (a library in-process, or which tool), for `doctor`."""
        ...

    def inventory(self) -> list[GpuInfo]:
        """Index, arch, name and uuid of every GPU (read once per session)."""
        ...

    def visible_value(self, gpus: list[GpuInfo]) -> str:
        """The visibility variable's value that exposes exactly ``gpus``, in that order."""
        ...

    def host_arch(self) -> str | None:
        """The arch of the host's GPUs (e.g. gfx950); None when it has none. Raises GpuToolError."""
        ...
