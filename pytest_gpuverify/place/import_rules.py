"""Where a target's command puts folders on ``sys.path`` before its ``PYTHONPATH``: the prediction of its
imports is made with these, the rules the command itself follows.

- an inner pytest (``python3 -m pytest FILE``): its ini file's ``pythonpath`` entries, relative to the
  rootdir (the ini file's folder, or ``--rootdir``), the folder of each ``conftest.py`` and of the test file
  as its default import mode (``prepend``) inserts them, and the working folder (``-m`` puts it first);
- a script (``python3 FILE``): the script's folder; ``python3 -m MODULE``: the working folder;
- any other command: nothing besides its ``PYTHONPATH``.

The ini file is found as pytest finds it: from the test file's folder up to the worktree's top, in each
folder ``pytest.toml``, ``.pytest.toml``, ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` with a
``[tool.pytest.ini_options]`` table, ``tox.ini`` with ``[pytest]``, ``setup.cfg`` with ``[tool:pytest]``;
``-c FILE`` among the target's arguments wins. What a ``conftest.py`` does to ``sys.path`` at run time is
not predicted: the run's own record of its imports (import_probe.py) says where it really imported from.
"""

from __future__ import annotations

import configparser
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_gpuverify.config.targets import BENCH, PYTEST_KINDS, Target

_INI_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


@dataclass(frozen=True)
class IniFile:
    path: Path
    pythonpath: tuple[str, ...] = ()  # the entries as written (relative to the rootdir, or absolute)
    problem: str | None = None  # the file could not be read: no entry taken from it


@dataclass
class ImportFront:
    """The folders the command puts before its ``PYTHONPATH`` (in the place's paths, first first), and how
    each was found, for the artifact's notes."""

    dirs: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add(self, folder: str, why: str) -> None:
        if folder not in self.dirs:
            self.dirs.append(folder)
            self.said.append(f"{folder} ({why})")


def read_ini(path: Path) -> IniFile | None:
    """The pytest configuration of ``path`` when it holds one (a ``pytest.ini`` always does, even empty);
    None when it is not a pytest configuration file."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return (
            IniFile(path, problem=f"{path}: cannot be read ({exc})") if name in ("pytest.ini", ".pytest.ini") else None
        )
    if name.endswith(".toml"):
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            return IniFile(path, problem=f"{path}: not valid TOML ({exc})") if name != "pyproject.toml" else None
        table = (
            data.get("tool", {}).get("pytest", {}).get("ini_options")
            if name == "pyproject.toml"
            else data.get("pytest")
        )
        if not isinstance(table, dict):
            return None if name == "pyproject.toml" else IniFile(path)
        return IniFile(path, _entries(table.get("pythonpath")))
    section = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}.get(name, "pytest")
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        if name in ("pytest.ini", ".pytest.ini"):
            return IniFile(path, problem=f"{path}: not a valid ini file ({str(exc).splitlines()[0]})")
        return None
    if not parser.has_section(section):
        return IniFile(path) if name in ("pytest.ini", ".pytest.ini") else None
    return IniFile(path, _entries(parser.get(section, "pythonpath", fallback=None)))


def _entries(value: object) -> tuple[str, ...]:
    """An ini value of type ``paths``: a TOML list, or a string split as a shell would (pytest's own rule)."""
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError:
            return tuple(value.split())
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, (str, int, float)))
    return ()


def find_ini(start: Path, top: Path) -> IniFile | None:
    """The pytest configuration pytest would take for a test at ``start``, looked for up to ``top``."""
    here = start if start.is_dir() else start.parent
    while True:
        for name in _INI_NAMES:
            candidate = here / name
            if candidate.is_file():
                found = read_ini(candidate)
                if found is not None:
                    return found
        if here == top or top not in here.parents:
            return None
        here = here.parent


def _option(args: Sequence[str], *names: str) -> str | None:
    """The value of the last of ``names`` among pytest's arguments (``-c FILE``, ``--rootdir=DIR``)."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif name.startswith("--") and arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
    return value


def _in_place(host: Path, wt_host: Path, wt: str) -> str | None:
    """A host path in the worktree, as the place sees it; None outside the worktree."""
    try:
        rel = host.resolve().relative_to(wt_host.resolve())
    except ValueError:
        return None
    return str(PurePosixPath(wt) / rel.as_posix()) if rel.parts else wt


def _basedir(folder: Path, top: Path) -> Path:
    """The folder pytest's ``prepend`` import mode puts on ``sys.path`` for a module in ``folder``: the
    first one up that is not a package (holds no ``__init__.py``)."""
    while (folder / "__init__.py").is_file() and folder != top and top in folder.parents:
        folder = folder.parent
    return folder.parent if (folder / "__init__.py").is_file() else folder


def import_front(target: Target, wt_host: Path, wt: str, workdir: str, pythonpath: Sequence[str] = ()) -> ImportFront:
    """What the target's command puts before its ``PYTHONPATH`` (``pythonpath``: its entries), first first,
    in the place's paths: ``sys.path`` as the command has it when the test module imports the package."""
    front = ImportFront()
    wt_host = Path(wt_host)
    workdir_host = (
        wt_host / PurePosixPath(workdir).relative_to(wt) if PurePosixPath(workdir).is_relative_to(wt) else wt_host
    )
    if target.kind in PYTEST_KINDS:
        _pytest_front(front, target, wt_host, wt, workdir, workdir_host, pythonpath)
        return front
    path = target.path
    argv = (
        list(target.command or ())
        if target.kind == BENCH and target.command
        else ["python3", str(path.relative_to(wt_host)) if path is not None and path.is_relative_to(wt_host) else ""]
    )
    if len(argv) >= 2 and PurePosixPath(argv[0]).name.startswith("python"):
        rest = [a for a in argv[1:] if a not in ("-u", "-B", "-O", "-OO")]
        if rest and rest[0] == "-m":
            front.add(workdir, f"the working folder: {argv[0]} -m")
        elif rest and rest[0].endswith(".py"):
            script = PurePosixPath(workdir) / rest[0]  # an absolute script path stays itself
            front.add(str(script.parent), f"the script's folder: {argv[0]} {rest[0]}")
    return front


def _pytest_front(
    front: ImportFront,
    target: Target,
    wt_host: Path,
    wt: str,
    workdir: str,
    workdir_host: Path,
    pythonpath: Sequence[str],
) -> None:
    """``python3 -m pytest``: the working folder first; the ini's ``pythonpath`` entries go before it (early,
    in their order); then each ``conftest.py`` from the rootdir down, and last the test module, put their
    folder first when it is not on ``sys.path`` yet (the ``prepend`` import mode)."""
    tested = target.path if target.path is not None else workdir_host
    chosen = _option(target.args, "-c", "--config-file")
    ini = (read_ini(workdir_host / chosen) or IniFile(workdir_host / chosen)) if chosen else find_ini(tested, wt_host)
    rootdir_arg = _option(target.args, "--rootdir")
    rootdir = (workdir_host / rootdir_arg) if rootdir_arg else (ini.path.parent if ini is not None else wt_host)
    if ini is not None and ini.problem:
        front.problems.append(ini.problem)
    path: list[tuple[str, str]] = [(workdir, "the working folder: python3 -m pytest")]
    if ini is not None:
        shown = ini.path.relative_to(wt_host) if ini.path.is_relative_to(wt_host) else ini.path
        entries = []
        for entry in ini.pythonpath:
            place_dir = entry if entry.startswith("/") else _in_place(rootdir / entry, wt_host, wt)
            if place_dir is not None:
                entries.append((place_dir, f"pythonpath = {entry} in {shown}"))
        path = entries + path
    folder = tested if tested.is_dir() else tested.parent
    cut = rootdir if rootdir == wt_host or wt_host in rootdir.parents else wt_host
    chain = [here for here in [folder, *folder.parents] if here == cut or cut in here.parents]
    imported = [
        (here, f"{(here / 'conftest.py').relative_to(wt_host)}'s folder, as pytest imports it")
        for here in reversed(chain)
        if (here / "conftest.py").is_file()
    ]
    imported.append((folder, "the test file's folder, as pytest imports it"))
    for here, why in imported:
        place_dir = _in_place(_basedir(here, wt_host), wt_host, wt)
        if place_dir is not None and place_dir not in [p for p, _ in path] and place_dir not in pythonpath:
            path.insert(0, (place_dir, why))
    for place_dir, why in path:
        front.add(place_dir, why)
