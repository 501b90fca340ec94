"""A stand-in ``pynvml`` (nvidia-ml-py 13.x): just enough for the NVIDIA backend and the machine's
identity, with the values of the H200 capture in tests/data/samples/gpu_tools."""

from __future__ import annotations

import types
from types import SimpleNamespace

H200_UUID = "GPU-65f1ea9d-12db-24d6-1834-662f0f32fddd"


# ---------------------------------------------------------------------------------- NVML (stand-in)
class FakeNvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"NVMLError({self.value})"


def gpu_dev(**kw) -> dict:
    dev = {
        "uuid": H200_UUID,
        "name": "NVIDIA H200",
        "cc": (9, 0),
        "total": 150754820096,
        "v1_used": 644939776,
        "v2_used": 0,
        "samples": [],
        "rate": 0,
        "procs": [],
        "handle_error": None,
        "procs_error": None,
        "proc_samples": [],
        "proc_util_error": None,
    }
    dev.update(kw)
    return dev


class FakeNvml(types.ModuleType):
    """Just enough of ``pynvml`` (nvidia-ml-py 13.x) for the backend, with the H200 capture's values."""

    NVML_GPU_UTILIZATION_SAMPLES = 1
    nvmlMemory_v2 = 0x02000028

    def __init__(self, devices: list[dict], init_error: int | None = None) -> None:
        super().__init__("pynvml")
        self.NVMLError = FakeNvmlError
        self.devices, self.init_error = devices, init_error
        self.inits = self.shutdowns = 0
        self.sample_calls: list[int] = []

    def _dev(self, h: int) -> dict:
        return self.devices[h]

    def nvmlInit(self):
        if self.init_error is not None:
            raise FakeNvmlError(self.init_error)
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        if self.devices[i]["handle_error"] is not None:
            raise FakeNvmlError(self.devices[i]["handle_error"])
        return i

    def nvmlDeviceGetMemoryInfo(self, h, version=None):
        d = self._dev(h)
        if version:
            return SimpleNamespace(total=d["total"], reserved=d["v1_used"] - d["v2_used"], used=d["v2_used"])
        return SimpleNamespace(total=d["total"], used=d["v1_used"])

    def nvmlDeviceGetSamples(self, h, kind, last):
        assert kind == 1
        self.sample_calls.append(last)
        fresh = [(ts, v) for ts, v in self._dev(h)["samples"] if ts > last]
        if not fresh:
            raise FakeNvmlError(6)  # NVML_ERROR_NOT_FOUND: nothing since `last`
        return 1, [SimpleNamespace(timeStamp=ts, sampleValue=SimpleNamespace(uiVal=v)) for ts, v in fresh]

    def nvmlDeviceGetProcessUtilization(self, h, last):
        """As nvidia-ml-py: c_nvmlProcessUtilizationSample_t rows newer than ``last``; NOT_FOUND when none."""
        d = self._dev(h)
        if d["proc_util_error"] is not None:
            raise FakeNvmlError(d["proc_util_error"])
        fresh = [(ts, pid, sm) for ts, pid, sm in d["proc_samples"] if ts > last]
        if not fresh:
            raise FakeNvmlError(6)
        return [
            SimpleNamespace(pid=pid, timeStamp=ts, smUtil=sm, memUtil=0, encUtil=0, decUtil=0) for ts, pid, sm in fresh
        ]

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self._dev(h)["rate"], memory=0)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        if self._dev(h)["procs_error"] is not None:
            raise FakeNvmlError(self._dev(h)["procs_error"])
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=4294967295, computeInstanceId=4294967295)
            for pid, mem in self._dev(h)["procs"]
        ]

    def nvmlSystemGetProcessName(self, pid):
        if pid == 13:
            raise FakeNvmlError(6)
        return b"python3"

    def nvmlDeviceGetUUID(self, h):
        return self._dev(h)["uuid"]

    def nvmlDeviceGetName(self, h):
        return self._dev(h)["name"]

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self._dev(h)["cc"]
