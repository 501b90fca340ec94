"""Targets: what to run, how its command line and environment are built, and what it is called.

A target never runs on the host: it is a path (or, later, a declaration) turned into a command
that runs inside the container, in the worktree, with only its GPUs visible.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

AITER_OP_TEST = "aiter-op-test"

# Which package a worktree must import from, and its PYTHONPATH (contract section 4).
_PACKAGE_BY_KIND = {AITER_OP_TEST: "aiter"}


class Target(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # as shown to the user: the path relative to the rootdir
    kind: str
    path: Path  # host path of the file
    args: tuple[str, ...] = ()
    topic: str
    gpus: int = 1
    dtype: Optional[str] = None


def is_aiter_op_test(path: Path) -> bool:
    """``op_tests/**/test_*.py``: aiter's scripts, never imported on the host."""
    return path.suffix == ".py" and path.name.startswith("test_") and "op_tests" in path.parts[:-1]


def topic_for(path: Path) -> str:
    stem = path.stem[5:] if path.stem.startswith("test_") else path.stem
    return safe_topic(stem)


def safe_topic(text: str) -> str:
    """A topic that is safe as part of a file name on every filesystem."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")
    return cleaned[:80] or "target"


def import_package(kind: str) -> Optional[str]:
    return _PACKAGE_BY_KIND.get(kind)


def pythonpath(kind: str, wt: str) -> str:
    if kind == "flydsl-pytest":
        return f"{wt}/python:{wt}/build-fly/python_packages"
    return wt


def command_argv(target: Target, rel_path: PurePosixPath) -> list[str]:
    """The repo's own command, unchanged (seed: "Run the repo's own test target. Do not rewrite it")."""
    return ["python3", str(rel_path), *target.args]


class RunEnvironment(BaseModel):
    """The environment a target's command sees, besides what the container itself sets."""

    visible_var: str
    visible_value: str
    pythonpath: str
    jit_dir: str
    arch: Optional[str] = None
    extra: dict[str, str] = Field(default_factory=dict)

    def as_env(self) -> dict[str, str]:
        env = {
            self.visible_var: self.visible_value,
            "PYTHONPATH": self.pythonpath,
            "AITER_JIT_DIR": self.jit_dir,
            "PYTHONUNBUFFERED": "1",  # stdout and stderr reach the file in the order they happen
            "COLUMNS": "10000",  # pandas never elides columns of a summary table
        }
        if self.arch:
            env["GPU_ARCHS"] = self.arch  # aiter's import would otherwise probe rocminfo
        env.update(self.extra)
        return env
