"""A session's setup, checked before any GPU tool or container is touched: the host row, its lock,
the signing key and the artifacts' folder. Usable without pytest.

The engine (engine/session.py) starts from it; the xdist controller (face/roles.py) runs it alone,
so a bad setup stops the run once, there, before any worker starts, and no engine is built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.common.files import FileProblem, result_folder
from pytest_gpuverify.config.envfile import EnvFile, HostRow, LockSpec
from pytest_gpuverify.config.errors import UsageError, usage_error_of_line
from pytest_gpuverify.config.hosts import lock_for, select_host
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.engine.signing import SigningRow, signer_for


@dataclass(frozen=True)
class SessionSetup:
    host_row: HostRow
    lock_spec: LockSpec
    picker_command: str | None  # None: the builtin picker
    signer: SigningRow | None
    expected_arch: str | None
    out_dir: Path
    moves_lock: Path | None  # the lock of the artifact moves in out_dir


def check_setup(options: RunOptions, env: EnvFile) -> SessionSetup:
    """Every setup problem raises here (a UsageError), naming the fix."""
    host_row = select_host(env, options)
    lock_spec, picker_command = lock_for(env, host_row)
    signer = signer_for(env, host_row.host)  # its key is checked here, before any GPU
    out_dir, moves_lock = artifact_folder(env, options.ticket, options.invocation_dir)
    check_container_option(env, options.container, host_row.host)
    check_ab_base(options)
    check_ci_summary(options.ci_summary)
    return SessionSetup(
        host_row,
        lock_spec,
        picker_command,
        signer,
        (options.arch or host_row.arch or "").lower() or None,
        out_dir,
        moves_lock,
    )


def artifact_folder(env: EnvFile, ticket: str | None, invocation_dir: Path) -> tuple[Path, Path | None]:
    """(the folder the artifacts go to, the lock of the moves in it). A ticket without a tickets
    folder means "stop and ask the user", never ./; a folder that cannot be written stops the run
    too: a result that cannot be written is not worth a run."""
    if ticket and env.resources.tickets is None:
        raise UsageError(
            "--ticket",
            f"--ticket {ticket} is given, but `tickets` is not set in section "
            f"'Resources' of {env.path}, so there is no ticket folder",
            "set | tickets | /path/to/tickets |, or drop --ticket to write to ./",
        )
    try:
        return result_folder(env.resources.tickets, ticket, invocation_dir)
    except FileProblem as exc:
        raise usage_error_of_line(env.resources.tickets or invocation_dir, f"artifacts: {exc}") from None


def check_container_option(env: EnvFile, name: str | None, host: str) -> None:
    """--gpu-container names a Containers row of this host (or ``none``: the host itself)."""
    from pytest_gpuverify.config.containers import runs_on_host
    from pytest_gpuverify.config.hosts import same_host

    if not name or runs_on_host(name):
        return
    row = env.container(name)
    if row is None:
        known = ", ".join(c.name for c in env.containers) or "none"
        raise UsageError(
            "--gpu-container",
            f"--gpu-container {name} is not in the Containers table of {env.path} (its rows: {known})",
            "add a row for it, or name one of its rows, or pass --gpu-container none",
        )
    if row.host is not None and not same_host(row.host, host):
        raise UsageError(
            "--gpu-container",
            f"--gpu-container {name} belongs to host {row.host} in the Containers table of {env.path}, not to {host}",
            f"run on {row.host} (--gpu-host {row.host}), or name a container of this host",
        )


def check_ab_base(options: RunOptions) -> None:
    """--gpu-ab's ref names a commit in every checkout the targets are in."""
    from pytest_gpuverify.place.ab import base_commit
    from pytest_gpuverify.place.gitstate import git_toplevel

    if not options.ab_base:
        return
    checkouts = {git_toplevel(p) for p in options.paths or (options.invocation_dir,)}
    for top in sorted(t for t in checkouts if t is not None):
        base_commit(top, options.ab_base)


def check_ci_summary(path: Path | None) -> None:
    """--gpu-ci-summary's file can be written: its folder exists and is writable."""
    from pytest_gpuverify.common.files import output_file_problem

    problem = output_file_problem(path) if path is not None else None
    if problem is not None:
        raise UsageError("--gpu-ci-summary", f"--gpu-ci-summary {path}: {problem[0]}", problem[1])
