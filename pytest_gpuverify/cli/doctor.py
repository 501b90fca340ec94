"""``gpuverify doctor``: the read-only health check of a GPU host, as one report.

Hostname and its Hosts row; every GPU's use, VRAM and processes; the machine's identity as every artifact
records it (place/machine.py); which GPUs someone holds the lock of
right now; whether the tickets folder can be written; per container of the env file on this host: running or not, the arch inside, and the
HIP_VISIBLE_DEVICES / AITER_JIT_DIR it sets; per Repos row: the last commit and the first lines of
``git status --short``. It ends with one judgement line, non-zero when the host's arch is not the
Hosts row's, a container is missing or stopped, or a repo is dirty. It changes nothing: it reads GPU
tools, ``/proc/locks``, ``docker inspect``, runs ``rocminfo`` only inside the user's own containers,
and ``git`` read-only commands.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.execute.host_commands import LocalHost
from pytest_gpuverify.gpu import select_backend
from pytest_gpuverify.gpu.base import GpuToolError
from pytest_gpuverify.lease.lock import describe_pid, lock_holders, lock_id
from pytest_gpuverify.lease.sampler import GIB, IdleCriteria, busy_reason

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


def run_doctor(env: EnvFile, host_name: str | None = None, docker_factory=None) -> DoctorReport:
    from pytest_gpuverify import __version__
    from pytest_gpuverify.config.hosts import lock_for

    report = DoctorReport()
    report.lines.append(f"plugin    pytest-gpuverify {__version__}")
    here = socket.gethostname()
    row, why = _host_row(env, host_name)
    report.lines.append(
        f"host      {here}  (Hosts row: {row.host if row else 'none'}"
        f"{', arch ' + row.arch if row and row.arch else ''}{', ' + str(row.gpus) + ' GPUs' if row and row.gpus else ''})"
    )
    _tickets(report, env)
    if row is None:
        report.problems.append(why or f"no local row in Hosts of {env.path}")
        return report
    runner = LocalHost()
    backend = select_backend(row.arch, runner)
    _gpus(report, env, row, backend, lock_for)
    _machine(report, backend)
    running = _containers(report, env, row, backend.vendor, docker_factory)
    _repos(report, env)
    _mounts(report, env, running)
    return report


def _host_row(env: EnvFile, host_name: str | None):
    """The Hosts row a session here would take (the run's own rule, config/hosts.py), or why none."""
    from pytest_gpuverify.config.errors import UsageError
    from pytest_gpuverify.config.hosts import select_host
    from pytest_gpuverify.config.options import RunOptions

    try:
        return select_host(env, RunOptions(env_path=env.path, host=host_name)), None
    except UsageError as exc:
        return None, str(exc)


def _tickets(report: DoctorReport, env: EnvFile) -> None:
    """A tickets folder the artifacts cannot be written to stops every run before it starts; so does
    one every local user writes in without the sticky bit."""
    import stat

    from pytest_gpuverify.common.files import FileProblem, check_writable_dir, open_folder_problem, owner_and_mode

    if env.resources.tickets is None:
        return
    folder = Path(env.resources.tickets).expanduser()
    try:
        check_writable_dir(folder)
    except FileProblem as exc:
        report.lines.append(f"tickets   {exc}")
        report.problems.append(f"tickets folder {folder} is not writable")
        return
    problem = open_folder_problem(folder)
    if problem is not None:
        report.lines.append(f"tickets   {problem}")
        report.problems.append(f"tickets folder {folder} is writable by every user without the sticky bit")
        return
    shared = ""
    if folder.is_dir() and folder.stat().st_mode & stat.S_IWOTH:  # sticky, or open_folder_problem said so
        shared = "; every local user writes here, with the sticky bit: each user's files stay their own"
    report.lines.append(f"tickets   {folder} writable ({owner_and_mode(folder)}){shared}")


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
    holders = lock_holders() or {}
    idle = 0
    for r in readings:
        why = busy_reason(r, IdleCriteria())
        lock = lock_path_for(r.index) if lock_path_for else None
        lock_key = lock_id(lock) if lock else None
        holder = holders.get(lock_key) if lock_key is not None else None  # who took it, as /proc/locks says
        locked = holder is not None
        idle += not why and not locked
        vram = "?" if r.vram_used_bytes is None else f"{r.vram_used_bytes / GIB:.1f}"
        total = "?" if r.vram_total_bytes is None else f"{r.vram_total_bytes / GIB:.0f}"
        procs = ", ".join(f"{p.pid} {p.name}".strip() for p in r.processes) or "none"
        use = "?" if r.use_pct is None else f"{r.use_pct:g}%"
        report.lines.append(
            f"gpu {r.index:<5} use {use:<5} VRAM {vram}/{total} GiB  processes: {procs}  "
            f"{f'LOCKED ({lock}) by {describe_pid(holder)}' if holder is not None else 'unlocked'}  -> {why or 'idle'}"
        )
    if idle < len(readings):
        report.remarks.append(f"{idle} of {len(readings)} GPUs idle and unlocked")


def _machine(report: DoctorReport, backend) -> None:
    """The machine's identity as a run records it (place/machine.py), read afresh: which machine, exactly."""
    from pytest_gpuverify.place.machine import read_machine
    from pytest_gpuverify.records.machine import machine_line, partition_text

    try:
        inventory = backend.inventory()
    except GpuToolError:
        inventory = []  # the GPU tools' problem is reported above; the host's own facts are still read
    machine = read_machine(backend, inventory)
    report.lines.append(f"machine   {machine_line(machine)}")
    report.lines.append(
        f"          read with {machine.read_with}; DMI {machine.dmi_product or '?'}, serial {machine.dmi_serial or '?'}"
    )
    for g in machine.gpus:
        ecc = f"ECC {g.ecc_mode or '?'} ({_count(g.ecc_corrected)} corrected, {_count(g.ecc_uncorrected)} uncorrected)"
        report.lines.append(
            f"  gpu {g.index:<3} {g.name or '?'} {g.arch or '?'}  uuid {g.uuid or '?'}  serial {g.serial or '?'}  "
            f"vbios {g.vbios or '?'}  {partition_text(g) or 'partition ?'}  cap {_count(g.power_cap_w)} W  "
            f"{ecc}  max {_count(g.sm_mhz_max)}/{_count(g.mem_mhz_max)} MHz"
        )
    report.lines.extend(f"  unknown: {line}" for line in machine.unknowns)


def _count(value) -> str:
    return "?" if value is None else f"{value:g}"


def _window_line(env: EnvFile, row, backend) -> str:
    """Which applies to a session's first pick: the driver's history, the background sampler's, or
    the window itself (at the default window, with a session's interval and shared readings file)."""
    from pytest_gpuverify.config.hosts import lock_for
    from pytest_gpuverify.config.options import RunOptions
    from pytest_gpuverify.lease.sampler import sampling_interval
    from pytest_gpuverify.lease.shared_readings import readings_for
    from pytest_gpuverify.lease.window_history import describe_window

    try:
        template = lock_for(env, row)[0].path_template
    except Exception:  # a bad lock cell is reported above
        return "unknown (no lock convention)"
    window = RunOptions.model_fields["window_s"].default
    interval = sampling_interval(window)
    shared = readings_for(row.host, template, interval)
    return describe_window(backend, shared.path, window, interval)


def _containers(report: DoctorReport, env: EnvFile, row, vendor: str, docker_factory) -> dict[str, dict]:
    """Each container's line; returns the running ones' ``docker inspect``, by name."""
    from pytest_gpuverify.config.containers import is_run_name
    from pytest_gpuverify.config.hosts import serves_host
    from pytest_gpuverify.execute.container import ContainerError, ContainerExecutor, docker_client
    from pytest_gpuverify.place.ephemeral import image_facts
    from pytest_gpuverify.place.provenance import container_arch, environment_of

    mine = [c for c in env.containers if serves_host(c.host, row.host)]
    found: dict[str, dict] = {}
    if not mine:
        return found
    try:
        client = (docker_factory or docker_client)()
    except Exception as exc:  # no engine: every container is missing, said once
        report.problems.append(f"Docker Engine not reachable: {exc}")
        return found
    for c in mine:
        if is_run_name(c.name):  # not a container: an image a run starts one from (ephemeral.py)
            assert c.image is not None  # row_problem (ephemeral.py) refuses a `run` row without one
            image_id, _, problem = image_facts(client, c.image)
            report.lines.append(
                f"container {c.name}: a fresh container per run, image {c.image} ({problem or image_id})"
            )
            if problem:
                report.problems.append(problem)
            continue
        handle = ContainerExecutor(client, c.name)
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
        env_vars = environment_of(handle.inspect())
        shown = " ".join(f"{k}={env_vars.get(k, '')}" for k in ENV_SHOWN)
        report.lines.append(f"container {c.name}: running, image {handle.image}, arch {arch or why}, {shown}")
        if arch and row.arch and arch != row.arch:
            report.problems.append(f"container {c.name} has arch {arch}, the Hosts row says {row.arch}")
        found[c.name] = handle.inspect()
    return found


def _mounts(report: DoctorReport, env: EnvFile, running: dict[str, dict]) -> None:
    """A Repos row whose path the container does not bind-mount makes every run of it INCONCLUSIVE
    (resolve.py checks the same); one mounted elsewhere than the row says runs, from where it is."""
    from pytest_gpuverify.place.resolve import bind_mounts, map_to_container

    for repo in env.repos:
        if repo.path is None or repo.container not in running:
            continue
        binds = bind_mounts(running[repo.container])
        actual = map_to_container(binds, repo.path)
        if actual is None:
            shown = ", ".join(f"{h} -> {c}" for h, c in binds) or "none"
            report.lines.append(f"repo {repo.repo}: {repo.path} is not mounted in {repo.container} (mounts: {shown})")
            report.problems.append(
                f"repo {repo.repo}: {repo.path} is not mounted in container {repo.container}, "
                "so its runs are INCONCLUSIVE. Fix: mount it, or correct the Repos row's path"
            )
        elif repo.mount and actual != repo.mount:
            report.lines.append(f"repo {repo.repo}: mounted at {actual} in {repo.container}, not at {repo.mount}")
            report.remarks.append(
                f"repo {repo.repo} is mounted at {actual} in {repo.container}, not at "
                f"{repo.mount} as the Repos row says (runs use {actual})"
            )


def _repos(report: DoctorReport, env: EnvFile) -> None:
    from pytest_gpuverify.place.gitstate import changes, git, git_toplevel, own_output_dirs

    for repo in env.repos:
        if repo.path is None:
            continue
        last = git(repo.path, "log", "-1", "--format=%h %s")
        top = git_toplevel(repo.path)
        if last is None or top is None:
            report.lines.append(f"repo {repo.repo}: {repo.path} is not a git checkout")
            continue
        dirty = changes(top, own_output_dirs(env.resources.tickets))  # the run's rule, the same function
        if dirty is None:
            report.lines.append(f"repo {repo.repo}: {repo.path} @ {last.strip()}  git status failed")
            report.problems.append(f"repo {repo.repo}: git status failed")
            continue
        report.lines.append(f"repo {repo.repo}: {repo.path} @ {last.strip()}{'  DIRTY:' if dirty else '  clean'}")
        report.lines.extend(f"    {code} {name}" for code, name in dirty[:10])
        if dirty:
            report.problems.append(f"repo {repo.repo} is dirty ({len(dirty)} paths)")


def add_health(report: DoctorReport, store: str | None, spec: str | None) -> None:
    """The GPUs the history store judges unhealthy (the picker skips them) and the hosts that often got no GPU,
    each one line; a store that cannot be read is one line too. Nothing when no store is named."""
    import os

    from pytest_gpuverify.history.db import ENV, StoreError, guard, locate, open_store, shown
    from pytest_gpuverify.history.health import (
        HEALTH_STORE_ENV,
        HealthSpecError,
        no_gpu_hosts,
        thresholds_from,
        thresholds_text,
        unhealthy,
    )

    named = store or os.environ.get(HEALTH_STORE_ENV) or os.environ.get(ENV)
    if not named:
        return
    name = locate(named)
    try:
        t = thresholds_from(spec, "--gpu-health")
        conn = open_store(name, reading=True)
        try:
            with guard(name, writing=False):
                gpus, hosts = unhealthy(conn, t), no_gpu_hosts(conn, t)
        finally:
            conn.close()
    except (StoreError, HealthSpecError, OSError) as exc:
        report.lines.append(f"health    not read: {exc}")
        report.remarks.append("GPU health not read")
        return
    report.lines.append(f"health    {shown(name)} ({thresholds_text(t)}): {len(gpus)} GPU(s) skipped by the picker")
    report.lines += [f"  unhealthy {g.line()}" for g in gpus] + [f"  no GPU    {line}" for line in hosts]
    if gpus:
        report.remarks.append(f"{len(gpus)} GPU(s) skipped for their health")
    if hosts:
        report.remarks.append(f"{len(hosts)} host(s) often without a GPU")
