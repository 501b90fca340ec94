"""Backend-neutral GPU facts. A backend turns tool output into these; the sampler judges them."""

from __future__ import annotations

from typing import Optional, Protocol

from pydantic import BaseModel, ConfigDict


class GpuToolError(RuntimeError):
    """A GPU tool could not be run or printed nothing usable. The message names the tool and why."""


def output_tail(res, width: int = 160) -> str:
    """``; stderr: <its last line>; stdout: <its start>`` of a tool's result, for an error message."""
    err = res.stderr.decode("utf-8", errors="replace").strip().splitlines()
    out = " ".join(res.text().split())[:width]
    return (f"; stderr: {err[-1][:200]}" if err else "") + (f"; stdout: {out!r}" if out else "; stdout empty")


class GpuProcess(BaseModel):
    model_config = ConfigDict(frozen=True)

    pid: int
    name: str = ""
    vram_bytes: Optional[int] = None  # None: the tool could not say (UNKNOWN / N/A)


class GpuReading(BaseModel):
    """One instant of one GPU. ``index`` is the index the command's visibility variable uses
    (HIP index on ROCm, NVML index on NVIDIA). ``None`` fields mean the tool did not report them."""

    model_config = ConfigDict(frozen=True)

    index: int
    use_pct: Optional[float] = None
    vram_used_bytes: Optional[int] = None
    vram_total_bytes: Optional[int] = None
    processes: tuple[GpuProcess, ...] = ()


class GpuInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    arch: Optional[str] = None
    name: Optional[str] = None
    uuid: Optional[str] = None


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
