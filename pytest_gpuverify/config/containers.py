"""The Containers table's rules: a `run` row (a fresh container per run) and its columns, and the
names that mean the host itself."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import PurePosixPath

HOST_CONTAINER = "host"  # the container name of a command run on the host itself (--gpu-container none)


RUN_ROW = re.compile(r"run(?::[A-Za-z0-9][A-Za-z0-9._-]*)?")


def is_run_name(name: str | None) -> bool:
    return name is not None and RUN_ROW.fullmatch(name) is not None


def parse_mounts(text: str | None) -> list[tuple[str, str, str]]:
    """The row's ``mounts`` cell: ``/opt/models:/opt/models:ro, /data:/data`` -> (host, container, mode).
    ValueError names the bad item."""
    mounts = []
    for item in re.split(r"[,;]", text or ""):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        mode = parts.pop() if len(parts) == 3 else "rw"
        if len(parts) != 2 or mode not in ("ro", "rw") or not all(PurePosixPath(p).is_absolute() for p in parts):
            raise ValueError(f"mount {item!r} is not HOST:CONTAINER[:ro|rw] with absolute paths")
        mounts.append((os.path.expanduser(parts[0]), parts[1], mode))
    return mounts


def parse_env(text: str | None) -> dict[str, str]:
    """The row's ``env`` cell: ``A=1 B="x y"``. ValueError names the bad word."""
    env = {}
    for word in shlex.split(text or ""):
        name, eq, value = word.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"env {word!r} is not NAME=VALUE")
        env[name] = value
    return env


def row_problem(cells: dict) -> tuple[str, str] | None:
    """(message, fix) for a Containers row whose optional columns do not fit it; None when it is fine."""
    run = is_run_name(cells.get("name"))
    for column in ("mounts", "env"):
        if cells.get(column) and not run:
            return (
                f"column {column!r} is set on container {cells['name']!r}, which is not a `run` row",
                f"clear it: a named container has its own {column}; only a `run` row starts one with them.",
            )
    if run and not cells.get("image"):
        return "a `run` row has no image", "write the image to start, e.g. rocm/pytorch:latest."
    try:
        parse_mounts(cells.get("mounts"))
        parse_env(cells.get("env"))
    except ValueError as exc:
        return str(exc), "write mounts as /host:/container[:ro], comma-separated, and env as NAME=VALUE words."
    return None


def runs_on_host(container_option: str | None) -> bool:
    """``--gpu-container none`` (any case): commands run on the host itself. The one rule for it."""
    return (container_option or "").strip().casefold() == "none"
