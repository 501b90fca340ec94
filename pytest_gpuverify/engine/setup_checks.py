"""A session's setup, checked before any GPU tool or container is touched: the host row, its lock,
the signing key and the artifacts' folder. Usable without pytest.

The engine (engine/session.py) starts from it; the xdist controller (roles.py) runs it alone,
so a bad setup stops the run once, there, before any worker starts, and no engine is built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pytest_gpuverify.config.envfile import EnvFile, HostRow, LockSpec
from pytest_gpuverify.config.hosts import lock_for, select_host
from pytest_gpuverify.config.errors import UsageError, usage_error_of_line
from pytest_gpuverify.config.options import RunOptions
from pytest_gpuverify.engine.files import FileProblem, result_folder
from pytest_gpuverify.engine.signing import SigningRow, signer_for


@dataclass(frozen=True)
class SessionSetup:
    host_row: HostRow
    lock_spec: LockSpec
    picker_command: Optional[str]  # None: the builtin picker
    signer: Optional[SigningRow]
    expected_arch: Optional[str]
    out_dir: Path
    moves_lock: Optional[Path]  # the lock of the artifact moves in out_dir


def check_setup(options: RunOptions, env: EnvFile) -> SessionSetup:
    """Every setup problem raises here (a UsageError), naming the fix."""
    host_row = select_host(env, options)
    lock_spec, picker_command = lock_for(env, host_row)
    signer = signer_for(env, host_row.host)  # its key is checked here, before any GPU
    out_dir, moves_lock = artifact_folder(env, options.ticket, options.invocation_dir)
    return SessionSetup(host_row, lock_spec, picker_command, signer,
                        (options.arch or host_row.arch or "").lower() or None, out_dir, moves_lock)


def artifact_folder(env: EnvFile, ticket: Optional[str], invocation_dir: Path) -> tuple[Path, Optional[Path]]:
    """(the folder the artifacts go to, the lock of the moves in it). A ticket without a tickets
    folder is the seed's "stop and ask", never ./; a folder that cannot be written stops the run
    too: a result that cannot be written is not worth a run."""
    if ticket and env.resources.tickets is None:
        raise UsageError("--ticket", f"--ticket {ticket} is given, but `tickets` is not set in section "
                         f"'Resources' of {env.path}, so there is no ticket folder",
                         "set | tickets | /path/to/tickets |, or drop --ticket to write to ./")
    try:
        return result_folder(env.resources.tickets, ticket, invocation_dir)
    except FileProblem as exc:
        raise usage_error_of_line(env.resources.tickets or invocation_dir, f"artifacts: {exc}") from None
