"""A simulated ROCm host: fake ``rocm-smi``, ``amd-smi`` and ``rocminfo`` driven by a state file.

``install()`` puts the executables, their modules and the state file in one directory. That directory
is later bind-mounted read-only into test containers at the same path, so every path baked into the
tools is absolute, and the tools themselves need nothing but ``python3`` and its stdlib.

Layout: ``state.py`` is the state (pydantic, this side only); ``tools/`` holds the stdlib-only modules
the executables run, ``gpuverify_sim_common`` (state loading, faults, shared helpers, ``main``) and
one per tool (``gpuverify_sim_rocm_smi``, ``gpuverify_sim_amd_smi``, ``gpuverify_sim_rocminfo``).
``install()`` copies them flat into the bin dir, the state path baked into :data:`MODULE` alone.

Each executable is a five-line stub (after its shebang) importing ``main`` from :data:`MODULE` in the
same directory: an imported module is compiled once and cached (``__pycache__``), where a script is
compiled on every call, and ``-IS`` skips site-packages. ``main`` then imports just its own tool's
module. A reading (two tool calls) under a GPU lock is on the path of every lock handoff, so the
stand-in should cost about what Python's start does, not three times that.
"""

from __future__ import annotations

import os
import py_compile
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pytest_gpuverify.common.files import write_atomic
from pytest_gpuverify.simulator import tools as _tools
from pytest_gpuverify.simulator.state import (
    GIB,
    IDLE_VRAM,
    MIB,
    TOOL_NAMES,
    SimGpu,
    SimProcess,
    SimState,
    load_state,
    save_state,
)
from pytest_gpuverify.simulator.tools import MODULES

STATE_FILE = "sim-state.json"
# The simulated amdsmi library, where ROCm keeps the real one: ROCM_PATH=<bin dir> makes the ROCm
# backend load it in-process.
LIBRARY = "share/amd_smi/amdsmi/__init__.py"
MODULE = _tools.COMMON  # the module the stubs import main from, and the one with the state path baked in

__all__ = [
    "GIB",
    "IDLE_VRAM",
    "LIBRARY",
    "MIB",
    "MODULE",
    "MODULES",
    "STATE_FILE",
    "TOOL_NAMES",
    "SimGpu",
    "SimProcess",
    "SimState",
    "install",
    "load_state",
    "save_state",
    "tool_sources",
]


def tool_sources(state_path: Path) -> dict[str, str]:
    """Module name -> source of each of :data:`MODULES`, ``state_path`` baked into :data:`MODULE`."""
    tools_dir = Path(_tools.__file__).parent
    sources = {name: (tools_dir / f"{name}.py").read_text(encoding="utf-8") for name in MODULES}
    sources[MODULE] = _bake(sources[MODULE], state_path, f"{MODULE}.py")
    return sources


def _bake(source: str, state_path: Path, name: str) -> str:
    source, n = re.subn(
        r"^STATE_PATH = .*$", lambda _: f"STATE_PATH = {str(state_path)!r}", source, count=1, flags=re.M
    )
    if n != 1:  # a silent miss would make every tool read a state that does not exist
        raise RuntimeError(f"{name} lost its STATE_PATH line")
    return source


def tool_stub(bin_dir: Path) -> str:
    """What each executable contains: the shebang, then an import of ``main`` from :data:`MODULE` in ``bin_dir``."""
    # Never write bytecode when run: install() compiled it, and a tool run inside a container must
    # not leave files behind (a Python of another version there just compiles in memory).
    return (
        f"#!{_interpreter()}\nimport sys\nsys.dont_write_bytecode = True\n"
        f"sys.path.insert(0, {str(bin_dir)!r})\nfrom {MODULE} import main\nsys.exit(main())\n"
    )


def _interpreter() -> str:
    """The system Python when there is one: the same path works in containers that bind the host's
    /usr, and it starts in milliseconds, where a PATH lookup may hit a slow wrapper (pyenv's shim).
    ``-IS`` (one shebang argument): no site-packages (the tools are stdlib-only) and no PYTHON* variables of the caller."""
    return "/usr/bin/python3 -IS" if os.access("/usr/bin/python3", os.X_OK) else "/usr/bin/env python3"


def install(bin_dir: Path, state: SimState, tools: Sequence[str] = TOOL_NAMES) -> Path:
    """Write ``bin_dir/sim-state.json``, the tools' modules (:data:`MODULES`) and one executable per
    tool in ``tools``; return the state path.

    ``amd-smi`` is left out (and removed if an earlier install put it there) when
    ``state.amd_smi_installed`` is false, so ``which amd-smi`` fails as on a host without it.
    """
    unknown = [t for t in tools if t not in TOOL_NAMES]
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown}; known: {TOOL_NAMES}")
    bin_dir = Path(bin_dir).resolve()
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_path = save_state(state, bin_dir / STATE_FILE)
    for name, text in tool_sources(state_path).items():
        module = bin_dir / f"{name}.py"
        _write_executable(module, text, mode=0o644)
        py_compile.compile(str(module), doraise=True)  # the tools' Python reads it if it is of this version
    source = tool_stub(bin_dir)
    _write_executable(bin_dir / _tools.USE_TOOL, source)  # gpuverify-sim-use: a command's own GPU process
    for name in tools:
        target = bin_dir / name
        if name == "amd-smi" and not state.amd_smi_installed:
            target.unlink(missing_ok=True)
            continue
        _write_executable(target, source)
    # as a ROCm install says its version: $ROCM_PATH/.info/version (ROCM_PATH=<bin dir> loads the library too)
    (bin_dir / ".info").mkdir(exist_ok=True)
    write_atomic(bin_dir / ".info" / "version", f"{state.rocm_version}\n".encode(), mode=0o644)
    library = bin_dir / LIBRARY
    if "amd-smi" in tools and state.amd_smi_installed:  # the library ships with the tool
        library.parent.mkdir(parents=True, exist_ok=True)
        _write_executable(library, library_source(state_path), mode=0o644)
        py_compile.compile(str(library), doraise=True)
    else:
        library.unlink(missing_ok=True)
    return state_path


def library_source(state_path: Path) -> str:
    """The simulated ``amdsmi`` module with ``state_path`` baked in."""
    path = Path(_tools.__file__).parent / "amdsmi_fake.py"
    return _bake(path.read_text(encoding="utf-8"), state_path, path.name)


def _write_executable(target: Path, text: str, mode: int = 0o755) -> None:
    # Atomic like the state file: a tool replaced while a sampler runs it must never be half written.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
