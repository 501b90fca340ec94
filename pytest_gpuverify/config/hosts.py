"""Choosing the Hosts row and its GPU lock row, before anything touches a GPU."""

from __future__ import annotations

import socket
from typing import Optional

from pytest_gpuverify.config.envfile import EnvFile, EnvFileError, GpuLockRow, HostRow, LockPrefixError, LockSpec, parse_lock_prefix
from pytest_gpuverify.config.lockspec import lock_folder_problem
from pytest_gpuverify.config.options import RunOptions, SetupError


def select_host(env: EnvFile, options: RunOptions) -> HostRow:
    try:
        env.require("Hosts")
    except EnvFileError as exc:
        raise SetupError(str(exc)) from None
    if options.host:
        row = env.host(options.host)
        if row is None:
            names = ", ".join(h.host for h in env.hosts)
            raise SetupError(f"--gpu-host {options.host!r} is not in Hosts of {env.path}. Fix: use one of: {names}")
    elif options.arch:
        rows = env.hosts_for_arch(options.arch)
        if not rows:
            raise SetupError(
                f"no host with arch {options.arch} in Hosts of {env.path}. "
                f"Fix: add a row for it, or pass another --gpu-arch"
            )
        local = [r for r in rows if r.is_local]
        if len(rows) > 1 and len(local) != 1:
            raise SetupError(
                f"{len(rows)} hosts have arch {options.arch} in {env.path}. Fix: pick one with --gpu-host "
                + " or --gpu-host ".join(r.host for r in rows)
            )
        row = local[0] if local else rows[0]
    elif len(env.hosts) == 1:
        row = env.hosts[0]
    else:
        raise SetupError(
            f"{env.path} lists {len(env.hosts)} hosts. Fix: pass --gpu-arch (e.g. "
            f"{env.hosts[0].arch or 'gfx942'}) or --gpu-host (e.g. {env.hosts[0].host})"
        )
    if options.arch and row.arch and row.arch != options.arch.lower():
        raise SetupError(
            f"host {row.host} has arch {row.arch} in {env.path}, but --gpu-arch is {options.arch}. "
            "Fix: drop one of --gpu-host/--gpu-arch"
        )
    if not row.is_local and not options.on_host:
        raise SetupError(
            f"host {row.host} is reached over SSH ({row.ssh_alias}); this version runs on the GPU host itself. "
            f"Fix: run pytest on {row.host}"
        )
    here = socket.gethostname()
    if _short(here) != _short(row.host):
        raise SetupError(
            f"this machine is {here!r}, but the local row of Hosts in {env.path} is {row.host!r}. "
            "Fix: correct the host cell, or run on that host"
        )
    return row


def lock_for(env: EnvFile, host: HostRow) -> tuple[LockSpec, Optional[str]]:
    """(lock spec, picker command or None for builtin). Either cell unset: stop and ask."""
    row: Optional[GpuLockRow] = env.gpu_lock(host.host)
    where = f"section 'GPU lock' of {env.path}"
    if row is None:
        raise SetupError(f"no row for host {host.host} in {where}. Fix: add | {host.host} | builtin | flock ... |")
    if row.picker is None:
        raise SetupError(f"the picker for {host.host} is not set in {where}. Fix: write `builtin` or a picker command")
    if row.lock is None:
        raise SetupError(
            f"the lock for {host.host} is not set in {where}. "
            "Fix: write a flock prefix, e.g. `flock -E 75 -w 600 /var/lock/gpu-<id>.lock`"
        )
    try:
        spec = parse_lock_prefix(row.lock)
    except LockPrefixError as exc:
        raise SetupError(f"{where}, host {host.host}: {exc}") from None
    problem = lock_folder_problem(spec)
    if problem:
        raise SetupError(f"{where}, host {host.host}: {problem}")
    return spec, (None if row.picker_is_builtin else row.picker)


def _short(name: str) -> str:
    return name.split(".")[0].lower()
