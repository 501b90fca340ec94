"""The command line xdist sends to the workers on GPU hosts.

Path arguments inside a local checkout of a Repos row become ``<repo>:<path>``, found in the host's
own checkout (remote/onhost.py). xdist refuses (an INTERNALERROR in its worker set-up) any argument
that is a path existing here but not under one of its rsync roots (``make_reltoroot``): an option's
value given as a separate argument (``--junitxml /abs/x.xml``) is one. Such a value is joined to its
option (``--junitxml=/abs/x.xml``, ``-c/abs/x.ini``), the spelling xdist passes through.
``--gpu-env`` is not sent at all: each host reads its own env file, whose paths are the host's."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.config.errors import UsageError

LOCAL_ONLY = ("--gpu-env",)  # options whose value is this machine's, never a host's


def _exists(arg: str) -> bool:
    try:
        return Path(arg).exists()
    except (OSError, ValueError):
        return False


def worker_args(args: list[str], positional: list[str]) -> list[str]:
    """``args`` as the workers get them; ``positional``: pytest's file-or-folder arguments (a path
    argument is never taken for an option's value)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        following = args[i + 1] if i + 1 < len(args) else None
        if name in LOCAL_ONLY:
            i += 1 if eq or following is None else 2
            continue
        if (
            arg.startswith("-")
            and arg != "--"
            and not eq
            and following is not None
            and following not in positional
            and _exists(following)
        ):
            out.append(f"{arg}={following}" if arg.startswith("--") else arg + following)
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def args_for_hosts(args: list[str], positional: list[str], here: Path, env: EnvFile) -> list[str]:
    """What the workers get, from the session's ``args`` run in ``here``."""
    from pytest_gpuverify.remote.sync import local_checkout, repo_qualified

    try:
        top, row = local_checkout(here, env)
    except UsageError:
        pass  # no checkout here: the paths are the hosts'
    else:
        args = repo_qualified(args, positional, here, top, row.repo)
    return worker_args(args, positional)
