"""``gpuverify doctor``: the seed's read-only health check of a GPU host, as one report.

Hostname and its Hosts row; every GPU's use, VRAM and processes; which GPUs someone holds the lock of
right now; per container of the env file on this host: running or not, the arch inside, and the
HIP_VISIBLE_DEVICES / AITER_JIT_DIR it sets; per Repos row: the last commit and the first lines of
``git status --short``. It ends with one judgement line, non-zero when the host's arch is not the
Hosts row's, a container is missing or stopped, or a repo is dirty. It changes nothing: it reads GPU
tools, ``/proc/locks``, ``docker inspect``, runs ``rocminfo`` only inside the user's own containers,
and ``git`` read-only commands.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .envfile import EnvFile
from .gpu import select_backend
from .gpu.base import GpuToolError
from .hostexec import LocalHost
from .lock import held_lock_ids, is_held
from .sampler import GIB, IdleCriteria, busy_reason

ENV_SHOWN = ("HIP_VISIBLE_DEVICES", "AITER_JIT_DIR", "CUDA_VISIBLE_DEVICES")


@dataclass
class DoctorReport:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each makes the exit non-zero
    remarks: list[str] = field(default_factory=list)  # worth knowing, not a stop (busy or locked GPUs)

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def judgement(self) -> str:
        if self.problems:
            return "NOT READY: " + "; ".join(self.problems)
        return "READY" + (f" ({'; '.join(self.remarks)})" if self.remarks else "")

    def text(self) -> str:
        return "\n".join([*self.lines, self.judgement()])


def run_doctor(env: EnvFile, host_name: Optional[str] = None, docker_factory=None) -> DoctorReport:
    from .hosts import lock_for

    report = DoctorReport()
    here = socket.gethostname()
    row = env.host(host_name) if host_name else next((h for h in env.hosts if h.is_local), None)
    report.lines.append(f"host      {here}  (Hosts row: {row.host if row else 'none'}"
                        f"{', arch ' + row.arch if row and row.arch else ''}{', ' + str(row.gpus) + ' GPUs' if row and row.gpus else ''})")
    if row is None:
        report.problems.append(f"no local row in Hosts of {env.path}")
        return report
    runner = LocalHost()
    backend = select_backend(row.arch, runner)
    _gpus(report, env, row, backend, lock_for)
    _containers(report, env, row, backend.vendor, docker_factory)
    _repos(report, env)
    return report


def _gpus(report: DoctorReport, env: EnvFile, row, backend, lock_for) -> None:
    try:
        arch = backend.host_arch()
    except GpuToolError as exc:
        arch = None
        report.problems.append(f"cannot read the host's arch: {exc}")
    if arch and row.arch and arch != row.arch:
        report.problems.append(f"host arch is {arch}, the Hosts row says {row.arch}")
    report.lines.append(f"arch      {arch or 'unknown'}")
    try:
        lock_path_for = lock_for(env, row)[0].path_for
    except Exception as exc:  # a bad lock cell is reported, the rest of the check goes on
        lock_path_for = None
        report.problems.append(str(exc))
    try:
        readings = backend.read()
    except GpuToolError as exc:
        report.problems.append(f"GPU tools: {exc}")
        return
    report.lines.append(f"readings  {backend.reading_source()}")
    report.lines.append(f"window    {_window_line(env, row, backend)}")
    held = held_lock_ids() or set()
    idle = 0
    for r in readings:
        why = busy_reason(r, IdleCriteria())
        lock = lock_path_for(r.index) if lock_path_for else None
        locked = bool(lock and is_held(lock, held))
        idle += not why and not locked
        vram = "?" if r.vram_used_bytes is None else f"{r.vram_used_bytes / GIB:.1f}"
        total = "?" if r.vram_total_bytes is None else f"{r.vram_total_bytes / GIB:.0f}"
        procs = ", ".join(f"{p.pid} {p.name}".strip() for p in r.processes) or "none"
        use = "?" if r.use_pct is None else f"{r.use_pct:g}%"
        report.lines.append(f"gpu {r.index:<5} use {use:<5} VRAM {vram}/{total} GiB  processes: {procs}  "
                            f"{'LOCKED (' + str(lock) + ')' if locked else 'unlocked'}  -> {why or 'idle'}")
    if idle < len(readings):
        report.remarks.append(f"{idle} of {len(readings)} GPUs idle and unlocked")


def _window_line(env: EnvFile, row, backend) -> str:
    """Which applies to a session's first pick: the driver's history, the background sampler's, or
    the window itself (at the default window, with a session's interval and shared readings file)."""
    from .hosts import lock_for
    from .options import RunOptions
    from .shared_readings import SharedReadings
    from .window_history import describe_window

    try:
        template = lock_for(env, row)[0].path_template
    except Exception:  # a bad lock cell is reported above
        return "unknown (no lock convention)"
    window = RunOptions.model_fields["window_s"].default
    interval = min(1.0, max(0.2, window / 5))
    shared = SharedReadings(f"{row.host}|{template}", max_age_s=interval)
    return describe_window(backend, shared.path, window, interval)


def _containers(report: DoctorReport, env: EnvFile, row, vendor: str, docker_factory) -> None:
    from .container import ContainerError, ContainerHandle, docker_client
    from .provenance import container_arch

    mine = [c for c in env.containers if not c.host or c.host.lower() == row.host.lower()]
    if not mine:
        return
    try:
        client = (docker_factory or docker_client)()
    except Exception as exc:  # no engine: every container is missing, said once
        report.problems.append(f"Docker Engine not reachable: {exc}")
        return
    for c in mine:
        handle = ContainerHandle(client, c.name)
        try:
            running = handle.running
        except ContainerError:
            report.lines.append(f"container {c.name}: missing")
            report.problems.append(f"container {c.name} is missing")
            continue
        if not running:
            report.lines.append(f"container {c.name}: stopped")
            report.problems.append(f"container {c.name} is stopped (`docker start {c.name}`)")
            continue
        arch, why = container_arch(handle, vendor)
        env_vars = dict(i.split("=", 1) for i in (handle.inspect().get("Config") or {}).get("Env") or [] if "=" in i)
        shown = " ".join(f"{k}={env_vars.get(k, '')}" for k in ENV_SHOWN)
        report.lines.append(f"container {c.name}: running, image {handle.image}, arch {arch or why}, {shown}")
        if arch and row.arch and arch != row.arch:
            report.problems.append(f"container {c.name} has arch {arch}, the Hosts row says {row.arch}")


def _repos(report: DoctorReport, env: EnvFile) -> None:
    for repo in env.repos:
        if repo.path is None:
            continue
        last = _git(repo.path, "log", "-1", "--format=%h %s")
        status = _git(repo.path, "status", "--short")
        if last is None:
            report.lines.append(f"repo {repo.repo}: {repo.path} is not a git checkout")
            continue
        dirty = [line for line in (status or "").splitlines() if line.strip()]
        report.lines.append(f"repo {repo.repo}: {repo.path} @ {last.strip()}{'  DIRTY:' if dirty else '  clean'}")
        report.lines.extend(f"    {line}" for line in dirty[:10])
        if dirty:
            report.problems.append(f"repo {repo.repo} is dirty ({len(dirty)} paths)")


def _git(path: Path, *args: str) -> Optional[str]:
    try:
        res = subprocess.run(["git", "-C", str(path), *args], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.decode("utf-8", errors="replace") if res.returncode == 0 else None
