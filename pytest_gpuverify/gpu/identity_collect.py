"""What both sides of the machine's identity (identity.py, identity_nvidia.py) share: the facts that
change without a reboot, and the collector of one reading's facts per GPU with why each missing one
is missing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_gpuverify.gpu.base import GpuToolError
from pytest_gpuverify.gpu.identity_formats import Facts

CHANGING = {
    "rocm": (
        "compute_partition",
        "memory_partition",
        "power_cap_w",
        "ecc_mode",
        "ecc_corrected",
        "ecc_uncorrected",
        "sm_mhz_max",
        "mem_mhz_max",
    ),
    "nvidia": ("mig_mode", "power_cap_w", "ecc_mode", "ecc_corrected", "ecc_uncorrected", "sm_mhz_max", "mem_mhz_max"),
}


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__


class Collect:
    """One reading's facts per GPU and why each missing one is missing."""

    def __init__(self, read_with: str, indices: list[int]) -> None:
        self.out: Facts = {"read_with": read_with, "gpus": [{"index": i} for i in indices], "why": {}, "failed": []}
        self.by_index = {g["index"]: g for g in self.out["gpus"]}

    def put(self, index: int, key: str, value: Any, why: str) -> None:
        if index not in self.by_index:
            return
        self.by_index[index][key] = value
        if value is None:
            self.out["why"].setdefault(key, {})[str(index)] = why

    def call(self, index: int, keys: tuple[str, ...], fn: Callable[[], tuple], name: str) -> None:
        """``fn()`` gives one value per key; a raise leaves them all unknown with its message."""
        try:
            values = fn()
        except Exception as exc:  # AmdSmiLibraryException, NVMLError, a shape this code does not know
            values, why = (None,) * len(keys), f"{name}: {one_line(exc)}"
        else:
            why = f"{name}: not given"
        for key, value in zip(keys, values):
            self.put(index, key, value, why)

    def fail(self, what: str) -> None:
        self.out["failed"].append(what)


def run_tool(backend: Any, argv: tuple[str, ...]) -> str:
    res = backend.host.run(list(argv), timeout=backend.tool_timeout)
    if not res.ok:
        raise GpuToolError(res.describe())
    return res.text()
