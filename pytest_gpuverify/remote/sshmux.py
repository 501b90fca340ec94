"""One ssh connection per GPU host for the whole session (OpenSSH's ControlMaster).

The preflight's connection to a host (remote/preflight.py) stays open as its master; the workers'
gateways (remote/txspec.py) and --gpu-sync's rsync open their sessions over it, so each skips a TCP
connect, a key exchange and a login: the workers of a host start sooner, most of all over a slow
link. A session the master cannot open (the host's sshd ``MaxSessions``, default 10) makes ssh
connect on its own, as without sharing. The masters end with the session (``ssh -O exit``), or at the
latest ``PERSIST_S`` after their last session if the controller is killed.

Off with ``GPUVERIFY_SSH_SHARE=0`` (and on Windows, whose OpenSSH has no ControlMaster)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

SHARE_VARIABLE = "GPUVERIFY_SSH_SHARE"
PERSIST_S = 30  # a master with no session left waits this long for the next, then ends
_SOCKET_NAME = "%C"  # ssh's hash of (local host, remote host, port, user): 40 characters


class SharedSsh:
    """The folder of the masters' sockets, private to this session."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def options(self) -> list[str]:
        """ssh options: use the host's master, or become it."""
        return [
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={self.folder}/{_SOCKET_NAME}",
            "-o",
            f"ControlPersist={PERSIST_S}",
        ]

    def close(self, aliases: list[str], config: str | None) -> None:
        """End each alias's master, all at once (none started: ssh says so, harmless), and remove the folder."""
        from concurrent.futures import ThreadPoolExecutor

        def end(alias: str) -> None:
            argv = ["ssh", *(["-F", config] if config else []), *self.options(), "-O", "exit", alias]
            try:
                run_ssh(argv, timeout_s=10)
            except (OSError, subprocess.TimeoutExpired):
                pass  # the master ends by itself PERSIST_S after its last session

        if aliases:
            with ThreadPoolExecutor(max_workers=min(16, len(aliases))) as pool:
                list(pool.map(end, aliases))
        shutil.rmtree(self.folder, ignore_errors=True)


def run_ssh(argv: list[str], timeout_s: float | None, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``subprocess.run`` of an ssh command (or rsync over ssh), its input and output in files, not
    pipes: the first session to a host becomes its ControlPersist master, which forks into the
    background, and OpenSSH before 8.4 keeps that session's stdout and stderr open in it, so a pipe
    would end only with the master (``PERSIST_S`` after the session). Raises what ``subprocess.run``
    raises (OSError, TimeoutExpired: the command is killed)."""
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        given.write(stdin)
        given.seek(0)
        done = subprocess.run(argv, stdin=given, stdout=out, stderr=err, timeout=timeout_s)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, done.returncode, out.read(), err.read())


def shared_ssh(environ=os.environ) -> SharedSsh | None:
    """A new folder for this session's masters, or None where sharing is off or cannot work."""
    if os.name == "nt" or environ.get(SHARE_VARIABLE, "1").strip().lower() in ("0", "no", "false", "off"):
        return None
    folder = tempfile.mkdtemp(prefix="gv-ssh-")
    # a Unix socket's path has a limit of about 104 bytes; execnet splits its ssh options on spaces
    if len(folder) + 1 + 40 > 100 or " " in folder:
        shutil.rmtree(folder, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix="gv-ssh-", dir="/tmp")
    return SharedSsh(folder)
