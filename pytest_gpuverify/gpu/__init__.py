"""GPU backends: what each GPU is doing right now, and which arch it is."""

from .base import GpuBackend, GpuInfo, GpuProcess, GpuReading, GpuToolError

__all__ = ["GpuBackend", "GpuInfo", "GpuProcess", "GpuReading", "GpuToolError"]
