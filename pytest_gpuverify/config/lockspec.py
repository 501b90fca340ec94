"""The GPU lock cell of the env file: a ``flock`` prefix read into a :class:`LockSpec`.

The plugin takes the same kernel lock itself, so only the options that decide which lock file and how
long to wait matter; any other option is refused rather than silently dropped.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.config.errors import UsageError

LOCK_EXAMPLE = "write it as `flock -E 75 -w 600 /var/lock/gpu-<id>.lock`."


class LockPrefixError(UsageError, ValueError):
    """A GPU lock cell that is not a usable ``flock`` prefix; the env file reader adds file and row."""

    def __init__(self, message: str, fix: str = LOCK_EXAMPLE) -> None:
        super().__init__("GPU lock cell", message, fix)


class LockSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path_template: str  # absolute, with <id> where the GPU index goes
    wait_s: float | None = None  # None: wait forever (flock's default); 0: do not wait
    conflict_exit_code: int | None = None
    shared: bool = False  # always False from parse_lock_prefix, which refuses -s

    def path_for(self, gpu_index: int) -> Path:
        if isinstance(gpu_index, bool) or not isinstance(gpu_index, int) or gpu_index < 0:
            raise ValueError(f"a GPU index is a non-negative int, not {gpu_index!r}")
        return Path(self.path_template.replace("<id>", str(gpu_index)))


def lock_folder(spec: LockSpec) -> Path:
    """The folder that holds the lock files (the deepest one above the first ``<id>``)."""
    path = PurePosixPath(spec.path_template)
    fixed = []
    for part in path.parts[:-1]:
        if "<id>" in part:
            break
        fixed.append(part)
    return Path(*fixed)


def lock_folder_problem(spec: LockSpec) -> str | None:
    """Why no lock file can be made, found before any GPU is taken (None: the folder is there)."""
    folder = lock_folder(spec)
    if folder.is_dir():
        return None
    return (
        f"the GPU lock folder {folder} does not exist. Fix: create it for every GPU user "
        f"(`mkdir -p {folder} && chmod 1777 {folder}`), or write another folder in the lock cell"
    )


# flock option -> what it means for a GPU lock; a trailing "=" marks an option that takes a value.
_FLOCK_OPTIONS = {
    **dict.fromkeys(["-x", "-e", "--exclusive"], "exclusive"),
    **dict.fromkeys(["-o", "--close", "-F", "--no-fork", "--verbose"], "harmless"),
    **dict.fromkeys(["-n", "--nb", "--nonblock"], "nonblock"),
    **dict.fromkeys(["-w", "--wait", "--timeout"], "wait="),
    **dict.fromkeys(["-E", "--conflict-exit-code"], "exit="),
    **dict.fromkeys(["-s", "--shared"], "shared"),
    **dict.fromkeys(["-u", "--unlock"], "unlock"),
    **dict.fromkeys(["-c", "--command"], "command="),
}
_REFUSED_FLOCK_OPTIONS = {
    "shared": ("a shared (-s) GPU lock excludes nothing", "drop -s; a GPU lock is exclusive."),
    "unlock": ("-u releases a lock instead of taking one", "drop -u."),
    "command": ("the lock cell holds a command (-c)", "keep only the flock prefix; the plugin adds the command."),
}


def parse_lock_prefix(lock: str) -> LockSpec:
    """Read a GPU lock cell, a ``flock`` prefix such as ``flock -E 75 -w 600 /var/lock/gpu-<id>.lock``.

    The plugin takes the same kernel lock itself, so only the options that decide which lock and how
    long to wait matter; any other option is refused rather than silently dropped.
    """
    try:
        tokens = shlex.split(lock)
    except ValueError as exc:
        raise LockPrefixError(f"lock {lock!r} is not valid shell ({exc})") from None
    if not tokens or Path(tokens[0]).name != "flock":
        raise LockPrefixError(f"lock {lock!r} does not start with `flock`")
    options, positional = _flock_arguments(tokens[1:])
    wait_s: float | None = None
    exit_code: int | None = None
    for meaning, value in options:
        if meaning in _REFUSED_FLOCK_OPTIONS:
            raise LockPrefixError(*_REFUSED_FLOCK_OPTIONS[meaning])
        if meaning == "wait":
            wait_s = _lock_number(value, float, "wait", "write seconds, e.g. -w 600.")
        elif meaning == "exit":
            exit_code = int(_lock_number(value, int, "conflict exit code", "write 1-255, e.g. -E 75."))
    if not positional:
        raise LockPrefixError(f"lock {lock!r} names no lock file")
    if len(positional) > 1:
        raise LockPrefixError(
            f"lock {lock!r} has a command after the lock file",
            "keep only the flock prefix; the plugin adds the command.",
        )
    template = positional[0]
    if "<id>" not in template:
        raise LockPrefixError(
            f"lock path {template!r} has no <id>", "put <id> where the GPU index goes, e.g. /var/lock/gpu-<id>.lock."
        )
    if not PurePosixPath(template).is_absolute():
        raise LockPrefixError(
            f"lock path {template!r} is relative", "write an absolute path, e.g. /var/lock/gpu-<id>.lock."
        )
    nonblock = any(meaning == "nonblock" for meaning, _ in options)  # flock: -n beats -w
    return LockSpec(path_template=template, wait_s=0.0 if nonblock else wait_s, conflict_exit_code=exit_code)


def _flock_arguments(args: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(meaning, value) per option, and the positionals, read the way flock's getopt reads them:
    bundled short flags (``-xn``), attached values (``-w600``, ``--wait=600``), and no options
    after the first positional."""
    args = list(args)
    options: list[tuple[str, str | None]] = []
    positional: list[str] = []
    while args:
        token = args.pop(0)
        if positional or token == "-" or not token.startswith("-"):
            positional.append(token)
            continue
        if token == "--":
            positional.extend(args)
            break
        if token.startswith("--"):
            name, has_value, given = token.partition("=")
            named: list[tuple[str, str | None]] = [(name, given if has_value else None)]
        else:
            named = []
            for end, letter in enumerate(token[1:], start=2):
                takes_value = _FLOCK_OPTIONS.get(f"-{letter}", "").endswith("=")
                named.append((f"-{letter}", (token[end:] or None) if takes_value else None))
                if takes_value:
                    break
        for name, value in named:
            if name not in _FLOCK_OPTIONS:
                raise LockPrefixError(f"flock option {name!r} is not supported in a GPU lock")
            if _FLOCK_OPTIONS[name].endswith("=") and value is None:
                if not args:
                    raise LockPrefixError(f"flock option {name} needs a value")
                value = args.pop(0)
            options.append((_FLOCK_OPTIONS[name].rstrip("="), value))
    return options, positional


def _lock_number(text: str | None, kind: type, what: str, fix: str) -> int | float:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise LockPrefixError(f"{what} {text!r} is not a number", fix) from None
    # Exit code 0 would make "GPU taken" look like success; an infinite wait is no -w at all.
    if not math.isfinite(value) or not (1 <= value <= 255 if kind is int else value >= 0):
        raise LockPrefixError(f"{what} {text!r} is out of range", fix)
    return value
