"""Choosing the Hosts row and its GPU lock row, before anything touches a GPU."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from pytest_gpuverify.config.envfile import EnvFile, GpuLockRow, HostRow, LockSpec
from pytest_gpuverify.config.errors import UsageError, usage_error_of_line
from pytest_gpuverify.config.lockspec import lock_folder_problem
from pytest_gpuverify.config.options import RunOptions

# a GPU lock row that serves every machine without a row of its own (a cluster's nodes)
ANY_HOST = "*"


def select_host(env: EnvFile, options: RunOptions, environ: Mapping[str, str] = os.environ) -> HostRow:
    if not options.host:
        row = self_described(env, options, environ)
        if row is not None:
            return row
    env.require("Hosts")
    if options.host:
        row = env.host(options.host)
        if row is None:
            names = ", ".join(h.host for h in env.hosts)
            raise UsageError(
                "--gpu-host", f"--gpu-host {options.host!r} is not in Hosts of {env.path}", f"use one of: {names}"
            )
    elif options.arch:
        rows = env.hosts_for_arch(options.arch)
        if not rows:
            raise UsageError(
                env.path,
                f"no host with arch {options.arch} in Hosts of {env.path}",
                "add a row for it, or pass another --gpu-arch",
                named=True,
            )
        local = [r for r in rows if r.is_local]
        if len(rows) > 1 and len(local) != 1:
            raise UsageError(
                env.path,
                f"{len(rows)} hosts have arch {options.arch} in {env.path}",
                "pick one with --gpu-host " + " or --gpu-host ".join(r.host for r in rows),
                named=True,
            )
        row = local[0] if local else rows[0]
    elif len(env.hosts) == 1:
        row = env.hosts[0]
    else:
        raise UsageError(
            env.path,
            f"{env.path} lists {len(env.hosts)} hosts",
            f"pass --gpu-arch (e.g. {env.hosts[0].arch or 'gfx942'}) or --gpu-host (e.g. {env.hosts[0].host})",
            named=True,
        )
    if options.arch and row.arch and row.arch != options.arch.lower():
        raise UsageError(
            env.path,
            f"host {row.host} has arch {row.arch} in {env.path}, but --gpu-arch is {options.arch}",
            "drop one of --gpu-host/--gpu-arch",
            named=True,
        )
    if not row.is_local and not options.on_host:
        raise UsageError(
            env.path,
            f"host {row.host} is reached over SSH ({row.ssh_alias}); this version runs "
            f"on the GPU host itself (Hosts of {env.path})",
            f"run pytest on {row.host}",
            named=True,
        )
    here = socket.gethostname()
    if not same_host(here, row.host):
        raise UsageError(
            env.path,
            f"this machine is {here!r}, but the local row of Hosts in {env.path} is {row.host!r}",
            "correct the host cell, or run on that host",
            named=True,
        )
    return row


def self_described(env: EnvFile, options: RunOptions, environ: Mapping[str, str]) -> HostRow | None:
    """A Slurm node no Hosts row names describes itself: its hostname, the arch of --gpu-arch (else the
    one its tools report) and the GPUs its tools and its job's grant give. A cluster's nodes are many
    and come and go; the env file's per-machine rows apply only to the machines they name."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    here = socket.gethostname()
    if any(same_host(here, row.host) for row in env.hosts):
        return None
    return HostRow(host=here, ssh_alias="local", arch=options.arch.lower() if options.arch else None)


def lock_for(env: EnvFile, host: HostRow) -> tuple[LockSpec, str | None]:
    """(lock spec, picker command or None for builtin): the host's row, else the ``*`` row (every
    machine without a row of its own). Either cell unset: stop and ask."""
    row: GpuLockRow | None = env.gpu_lock(host.host) or env.gpu_lock(ANY_HOST)
    where = f"section 'GPU lock' of {env.path}"
    if row is None:
        raise UsageError(
            env.path,
            f"no row for host {host.host} in {where}",
            f"add | {host.host} | builtin | flock ... |, or | {ANY_HOST} | builtin | flock ... | for "
            "every machine without a row of its own",
            named=True,
        )
    if row.picker is None:
        raise UsageError(
            env.path,
            f"the picker for {host.host} is not set in {where}",
            "write `builtin` or a picker command",
            named=True,
        )
    if row.lock_spec is None:  # the cell is read (and checked) once, with the file: envfile.py
        raise UsageError(
            env.path,
            f"the lock for {host.host} is not set in {where}",
            "write a flock prefix, e.g. `flock -E 75 -w 600 /var/lock/gpu-<id>.lock`",
            named=True,
        )
    problem = lock_folder_problem(row.lock_spec)
    if problem:
        raise usage_error_of_line(env.path, f"{where}, host {host.host}: {problem}")
    return row.lock_spec, (None if row.picker_is_builtin else row.picker)


def same_host(one: str, other: str) -> bool:
    """Two names of one machine: compared by their first label, in any case (``hostname`` prints
    ``mi300x-01`` where a table may say ``mi300x-01.lab.example``)."""
    return one.split(".")[0].casefold() == other.split(".")[0].casefold()


def serves_host(row_host: str | None, host: str) -> bool:
    """Whether a table row (a container's) is for ``host``: a row without a host serves every host;
    one with a host, that machine by :func:`same_host`."""
    return not row_host or same_host(row_host, host)
