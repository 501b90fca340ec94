"""Which Hosts rows a session runs on over SSH, and the xdist ``--tx`` specs that start its workers."""

from __future__ import annotations

import os

from pytest_gpuverify.config.envfile import EnvFile, HostRow
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.remote.preflight import python_of, ssh_base
from pytest_gpuverify.remote.sshmux import SharedSsh

HOST_VARIABLE = "GPUVERIFY_XDIST_HOST"  # set on each worker (execnet's env: key): the Hosts row it serves
WORKER_DIR = ".gpuverify-xdist"  # the worker's cwd, under the ssh user's home; xdist copies pytest into it
# xdist copies pytest into WORKER_DIR at every session and deletes there the .pyc files it does not
# copy: each worker compiled pytest again (0.25-0.4 s of CPU). Its python keeps them elsewhere.
# ($HOME: expanded by the remote shell that runs execnet's command line.)
PYCACHE_PREFIX = "$HOME/.cache/gpuverify/pycache"


def remote_rows(env: EnvFile, host: str | None, arch: str | None, hosts: str | None) -> list[HostRow] | None:
    """The remote rows to run on, or None for a session that runs here (a `local` row)."""
    if hosts:
        return _fan_out_rows(env, hosts)
    if host:
        row = env.host(host)
        return [row] if row is not None and not row.is_local else None
    if arch:
        rows = env.hosts_for_arch(arch)
        return rows if len(rows) == 1 and not rows[0].is_local else None
    return None


def _fan_out_rows(env: EnvFile, hosts: str) -> list[HostRow]:
    remote = [r for r in env.hosts if not r.is_local]
    wanted = hosts.strip()
    if wanted.casefold() == "all":
        rows = remote
    elif "," not in wanted and env.hosts_for_arch(wanted):
        rows = [r for r in env.hosts_for_arch(wanted) if not r.is_local]
    else:
        rows = []
        for name in (n.strip() for n in wanted.split(",") if n.strip()):
            row = env.host(name)
            if row is None:
                raise UsageError(
                    "--gpu-hosts",
                    f"--gpu-hosts: {name!r} is not a host or arch in Hosts of {env.path}",
                    f"use all, an arch, or names from: {', '.join(h.host for h in env.hosts)}",
                )
            if row.is_local:
                raise UsageError(
                    "--gpu-hosts",
                    f"--gpu-hosts: {row.host} is the local row of {env.path}; fan-out starts workers over SSH",
                    "give it its ssh alias, or leave it out",
                )
            rows.append(row)
    if not rows:
        raise UsageError(
            "--gpu-hosts",
            f"--gpu-hosts {hosts}: no host reached over SSH matches in Hosts of {env.path}",
            "give the GPU hosts their ssh alias (not `local`)",
        )
    return rows


def tx_specs(
    rows: list[HostRow],
    per_host: int | None,
    ssh_config: str | None,
    timeout_s: float,
    rootdirs: dict[str, str | None] | None = None,
    shared: SharedSsh | None = None,
) -> list[str]:
    """One xdist worker per GPU of each host (or ``per_host``), started by ssh with the row's python.
    Each worker learns its Hosts row through the environment, before pytest parses anything.
    ``rootdirs``: host -> the folder of its own Repos rows' checkouts (each host keeps them where it
    likes: remote/hostfacts.py), so that node ids name each target's file as a run inside the
    checkout would, the same on every host (the worker's cwd holds only xdist's copy of pytest).
    ``shared``: the workers' ssh sessions go over the host's one connection (remote/sshmux.py)."""
    specs = []
    for row in rows:
        ssh = " ".join(ssh_base(row.ssh_alias or row.host, timeout_s, None, shared)[1:])  # execnet adds `ssh -C`
        python = f"{python_of(row)} -X pycache_prefix={PYCACHE_PREFIX}"
        spec = f"ssh={ssh}//python={python}//chdir={WORKER_DIR}//env:{HOST_VARIABLE}={row.host}"
        if ssh_config:
            spec += f"//ssh_config={ssh_config}"
        rootdir = (rootdirs or {}).get(row.host)
        if rootdir:
            spec += f"//env:PYTEST_ADDOPTS=--rootdir={rootdir}"
        specs += [spec] * (per_host or row.gpus or 1)
    return specs


def checkouts_root(env: EnvFile) -> str | None:
    """The deepest folder holding every Repos row's checkout (the row's own path when there is one)."""
    import os

    paths = [str(r.path) for r in env.repos if r.path is not None]
    return os.path.commonpath(paths) if paths else None


def host_of_spec(spec) -> str | None:
    """The Hosts row a worker's gateway spec serves (None: not one of ours)."""
    return (getattr(spec, "env", None) or {}).get(HOST_VARIABLE)


def serving_host(environ=os.environ) -> str | None:
    """The Hosts row this process serves as an xdist worker started over SSH, else None."""
    if environ.get("PYTEST_XDIST_WORKER"):
        return environ.get(HOST_VARIABLE) or None
    return None
