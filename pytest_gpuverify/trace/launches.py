"""One kernel launch as every trace reader gives it, whichever tool wrote the trace."""

from __future__ import annotations

from dataclasses import dataclass


class TraceError(Exception):
    """A trace file that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class Launch:
    name: str
    grid: tuple[int, ...]  # work-items per dimension on ROCm, blocks per dimension on CUDA
    start_ns: int
    end_ns: int
    code_object: str | None = None  # where the tracer says its code came from (a file:// or memory:// URI)

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)
