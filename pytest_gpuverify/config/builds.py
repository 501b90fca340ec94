"""The declaration file's ``[[builds]]``: the steps a worktree needs before its targets run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict

BUILD_KEYS = ("name", "command", "gpu", "workdir")


_NAME = re.compile(r"[A-Za-z0-9._-]+")


class BuildStep(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    command: tuple[str, ...]
    gpu: bool = False
    workdir: str | None = None  # relative to the worktree


ErrorFactory = Callable[[str, str | None, str, str], Exception]


def read_builds(
    value: Any, error: ErrorFactory, argv: Callable[[str, str, Any], tuple[str, ...]]
) -> tuple[BuildStep, ...]:
    """The declaration's ``builds`` array, checked; ``error(where, key, message, fix)`` and
    ``argv(where, key, value)`` are the declaration reader's (declarations.py)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(b, dict) for b in value):
        raise error(
            "top level",
            "builds",
            "builds is not a list of tables",
            'write each as its own [[builds]] block with command = "make ...".',
        )
    steps, seen = [], set()
    for index, block in enumerate(value, start=1):
        where = f"builds[{index}]"
        for key in block:
            if key not in BUILD_KEYS:
                raise error(
                    where, key, f"unknown key {key!r}", f"the allowed [[builds]] keys are: {', '.join(BUILD_KEYS)}."
                )
        if "command" not in block:
            raise error(where, "command", "the build has no command", 'add command = "make hip_kernels".')
        command = argv(where, "command", block["command"])
        name = block.get("name", PurePosixPath(command[0]).name)
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in seen:
            raise error(
                where,
                "name",
                f"name {name!r} is not a unique name of letters, digits and . _ -",
                'give each build its own name, e.g. name = "kernels".',
            )
        gpu = block.get("gpu", False)
        if not isinstance(gpu, bool):
            raise error(where, "gpu", f"gpu is {gpu!r}, not true or false", "write gpu = true or gpu = false.")
        workdir = block.get("workdir")
        if workdir is not None and (
            not isinstance(workdir, str) or PurePosixPath(workdir).is_absolute() or ".." in PurePosixPath(workdir).parts
        ):
            raise error(
                where,
                "workdir",
                f"workdir {workdir!r} is not a path inside the worktree",
                'write a relative path, e.g. workdir = "csrc".',
            )
        seen.add(name)
        steps.append(BuildStep(name=name, command=command, gpu=gpu, workdir=workdir))
    return tuple(steps)
