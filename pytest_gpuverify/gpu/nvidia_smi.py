"""The nvidia-smi path of the NVIDIA backend: ``nvidia-smi --query-*`` CSV through the
:class:`HostRunner`, turned into readings (the CSV parsing lives in :mod:`.nvidia_formats`).

:class:`.nvidia.NvidiaBackend` holds one :class:`SmiReader` and hands it its note-taking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_gpuverify.execute.host_commands import CommandResult, HostRunner
from pytest_gpuverify.gpu.base import GpuProcess, GpuReading, GpuToolError, output_tail
from pytest_gpuverify.gpu.nvidia_formats import (
    SMI,
    SMI_APPS,
    SmiApp,
    SmiGpu,
    parse_compute_apps_csv_lines,
    parse_query_gpu_csv_lines,
    smi_query_gpu_argv,
)


class SmiReader:
    """Readings and the GPU list from nvidia-smi (any host, local or remote)."""

    def __init__(self, host: HostRunner, tool_timeout: float, note: Callable[[str], None]) -> None:
        self.host, self.tool_timeout = host, tool_timeout
        self._note = note  # each time the reader leaves its preferred path, and why (the backend's notes)
        self._smi_cap = True  # ask compute_cap until the driver rejects the field

    def _run(self, argv: Sequence[str]) -> CommandResult:
        """Run nvidia-smi; GpuToolError (naming it) when missing or hung. The exit status is judged
        by the caller: nvidia-smi can print good rows and still exit non-zero for one lost GPU."""
        res = self.host.run(list(argv), timeout=self.tool_timeout)
        if res.missing:
            raise GpuToolError(f"{argv[0]}: not found on {self.host.name}")
        if res.timed_out:
            raise GpuToolError(f"{argv[0]}: no answer within {self.tool_timeout:g} s ({' '.join(argv)})")
        return res

    def gpus(self) -> list[SmiGpu]:
        with_cap = self._smi_cap
        res = self._run(smi_query_gpu_argv(with_cap))
        rows, other = parse_query_gpu_csv_lines(res.text(), with_cap)
        if with_cap and not rows and self._field_rejected(res):
            self._smi_cap = False
            self._note(f"{SMI} does not know the compute_cap field (an older driver): arch unknown from {SMI}")
            res = self._run(smi_query_gpu_argv(False))
            rows, other = parse_query_gpu_csv_lines(res.text(), False)
        if not rows:
            raise GpuToolError(f"{' '.join(res.argv)}: no GPU in its output (exit {res.returncode}){output_tail(res)}")
        if other:
            self._note(f"{SMI} --query-gpu printed {other[0][:200]!r} (such GPUs count as busy)")
        return rows

    @staticmethod
    def _field_rejected(res: CommandResult) -> bool:
        said = (res.text() + res.stderr.decode("utf-8", errors="replace")).lower()
        return "compute_cap" in said or "not a valid field" in said or "invalid field" in said

    def _apps(self) -> list[SmiApp]:
        res = self._run(SMI_APPS)
        apps, other = parse_compute_apps_csv_lines(res.text())
        if res.returncode != 0 and not apps:
            raise GpuToolError(f"{' '.join(res.argv)}: exit {res.returncode}, no process list{output_tail(res)}")
        if other:
            self._note(f"{SMI} --query-compute-apps printed {other[0][:200]!r}")
        return apps

    def read(self) -> list[GpuReading]:
        gpus = self.gpus()
        apps = self._apps()
        by_uuid = {g.uuid: g.index for g in gpus if g.uuid}
        no_uuid = [g.index for g in gpus if not g.uuid]
        per_gpu: dict[int, list[GpuProcess]] = {g.index: [] for g in gpus}
        for app in apps:
            proc = GpuProcess(pid=app.pid, name=app.name, vram_bytes=app.vram_bytes)
            if app.gpu_uuid in by_uuid:
                targets = [by_uuid[app.gpu_uuid]]
            elif app.gpu_uuid is None:
                targets = list(per_gpu)  # on some GPU, none can say which: each counts as busy
                self._note(f"{SMI}: process {app.pid} without a GPU UUID counted on every GPU")
            else:
                targets = no_uuid  # perhaps one whose UUID --query-gpu could not print
                if not targets:
                    self._note(f"{SMI}: process {app.pid} on {app.gpu_uuid}, which --query-gpu did not list")
            for index in targets:
                per_gpu[index].append(proc)
        return [
            GpuReading(
                index=g.index,
                use_pct=g.use_pct,
                vram_used_bytes=g.vram_used_bytes,
                vram_total_bytes=g.vram_total_bytes,
                processes=tuple(per_gpu[g.index]),
            )
            for g in gpus
        ]
