"""The GPU host's own commands (its GPU tools, ``ssh``), each bounded in time and size, its output
captured: not a target's command, which an :class:`~pytest_gpuverify.execute.base.Executor` runs.

Every GPU tool call goes through a :class:`HostRunner`, so a remote host (SSH) can later replace
:class:`LocalHost` without touching the backends.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pytest_gpuverify.common.threads import environ_copy
from pytest_gpuverify.execute.bounds import GRACE_S, kill_group

MAX_CAPTURE = 16 << 20  # a GPU tool printing more than this is broken; keep the head


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    missing: bool = False  # the executable was not found

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.missing

    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    def describe(self) -> str:
        if self.missing:
            return f"{self.argv[0]}: not found"
        if self.timed_out:
            return f"{' '.join(self.argv)}: timed out"
        err = self.stderr.decode("utf-8", errors="replace").strip().splitlines()
        tail = f": {err[-1][:200]}" if err else ""
        return f"{' '.join(self.argv)}: exit {self.returncode}{tail}"


class HostRunner(Protocol):
    name: str

    def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult: ...

    def which(self, program: str) -> str | None: ...


class LocalHost:
    """This machine. Commands run in their own process group so a timeout kills the whole tree."""

    name = "local"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env) if env is not None else None

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment its commands get (``env``, else this process's)."""
        return self._env if self._env is not None else os.environ

    def which(self, program: str) -> str | None:
        import shutil

        path = (self._env or os.environ).get("PATH")
        return shutil.which(program, path=path)

    def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> CommandResult:
        full_env = dict(self._env) if self._env is not None else environ_copy()
        if env:
            full_env.update(env)
        argv = tuple(argv)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            return CommandResult(argv, None, b"", b"", missing=True)
        except OSError as exc:
            return CommandResult(argv, None, b"", str(exc).encode(), missing=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            try:
                out, err = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:  # a process that left the group still holds the pipes
                proc.wait()  # the group's leader is killed: reaped, so its exit code is known
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
                out, err = b"", b""
            return CommandResult(argv, proc.returncode, out[:MAX_CAPTURE], err[:MAX_CAPTURE], timed_out=True)
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            raise
        return CommandResult(argv, proc.returncode, out[:MAX_CAPTURE], err[:MAX_CAPTURE])
