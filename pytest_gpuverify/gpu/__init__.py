"""GPU backends: what each GPU is doing right now, and which arch it is."""

from pytest_gpuverify.gpu.base import GpuBackend, GpuInfo, GpuProcess, GpuReading, GpuToolError

__all__ = ["GpuBackend", "GpuInfo", "GpuProcess", "GpuReading", "GpuToolError", "select_backend"]


def select_backend(arch: str | None, runner) -> GpuBackend:
    """ROCm for gfx arches, NVIDIA for sm_XY; with no arch given, whichever tool the host has."""
    rocm = bool(arch and arch.startswith("gfx"))
    if not arch:
        rocm = any(runner.which(tool) for tool in ("rocminfo", "amd-smi", "rocm-smi"))
    if rocm:
        from pytest_gpuverify.gpu.rocm import RocmBackend

        return RocmBackend(runner)
    from pytest_gpuverify.gpu.nvidia import NvidiaBackend

    return NvidiaBackend(runner)
