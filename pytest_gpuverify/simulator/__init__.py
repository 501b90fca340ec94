"""A simulated ROCm host: fake ``rocm-smi``, ``amd-smi`` and ``rocminfo`` driven by a state file.

``install()`` puts the executables and the state file in one directory. That directory is later
bind-mounted read-only into test containers at the same path, so every path baked into the tools is
absolute, and the tools themselves need nothing but ``python3``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Sequence

from . import tools as _tools
from .state import GIB, IDLE_VRAM, MIB, TOOL_NAMES, SimGpu, SimProcess, SimState, load_state, save_state

STATE_FILE = "sim-state.json"

__all__ = [
    "GIB", "IDLE_VRAM", "MIB", "STATE_FILE", "TOOL_NAMES", "SimGpu", "SimProcess", "SimState",
    "install", "load_state", "save_state", "tool_source",
]


def tool_source(state_path: Path) -> str:
    """tools.py with the ``python3`` shebang and ``state_path`` baked in (what each executable contains)."""
    src = Path(_tools.__file__).read_text(encoding="utf-8")
    src, n = re.subn(r"^STATE_PATH = .*$", lambda _: f"STATE_PATH = {str(state_path)!r}", src, count=1, flags=re.M)
    if n != 1:  # a silent miss would make every tool read a state that does not exist
        raise RuntimeError("tools.py lost its STATE_PATH line")
    if src.startswith("#!"):
        src = src.split("\n", 1)[1]
    return f"#!{_interpreter()}\n" + src


def _interpreter() -> str:
    """The system Python when there is one: the same path works in containers that bind the host's
    /usr, and it starts in milliseconds, where a PATH lookup may hit a slow wrapper (pyenv's shim)."""
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "/usr/bin/env python3"


def install(bin_dir: Path, state: SimState, tools: Sequence[str] = TOOL_NAMES) -> Path:
    """Write ``bin_dir/sim-state.json`` and one executable per tool in ``tools``; return the state path.

    ``amd-smi`` is left out (and removed if an earlier install put it there) when
    ``state.amd_smi_installed`` is false, so ``which amd-smi`` fails as on a host without it.
    """
    unknown = [t for t in tools if t not in TOOL_NAMES]
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown}; known: {TOOL_NAMES}")
    bin_dir = Path(bin_dir).resolve()
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_path = save_state(state, bin_dir / STATE_FILE)
    source = tool_source(state_path)
    for name in tools:
        target = bin_dir / name
        if name == "amd-smi" and not state.amd_smi_installed:
            target.unlink(missing_ok=True)
            continue
        _write_executable(target, source)
    return state_path


def _write_executable(target: Path, text: str) -> None:
    # Atomic like the state file: a tool replaced while a sampler runs it must never be half written.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
