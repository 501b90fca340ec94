"""The packages under test: which import packages a target's command must take from its worktree.

A declaration's ``packages`` wins; else the kind's own (``aiter``, ``flydsl``); else the project of the
nearest ``pyproject.toml`` between the target and its worktree's top (its import name, flat or ``src``
layout); else none, said in a note. Each is looked up from ``/`` with the command's own environment
(its PYTHONPATH before the place's own), in the container or on the host, and one that imports from
outside the worktree means the run would test another copy: the target does not run.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional

from pytest_gpuverify.config.targets import Target, import_package, kind_env, pythonpath

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
Lookup = Callable[[str, Mapping[str, str]], tuple[Optional[str], Optional[str]]]  # (package, env) -> (origin, why)


@dataclass(frozen=True)
class UnderTest:
    names: tuple[str, ...]
    source: str  # "declaration", "the aiter-op-test kind", "pyproject.toml project 'x'", or why none
    required: bool  # declared or the kind's: not importable at all blocks the run; a pyproject guess only notes it


@dataclass
class ImportCheck:
    imports: dict[str, Optional[str]] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def packages_under_test(target: Target, wt_host: Path) -> UnderTest:
    if target.packages is not None:
        return UnderTest(target.packages, "declaration", True)
    own = import_package(target.kind)
    if own:
        return UnderTest((own,), f"the {target.kind} kind", True)
    found = pyproject_package(target.location, wt_host)
    if found is not None:
        name, project = found
        return UnderTest((name,), f"pyproject.toml project {project!r}", False)
    return UnderTest((), "no package under test was checked: the target's kind has none and no pyproject.toml "
                         "names a project; declare packages = [\"<import name>\"] to check one", False)


def pyproject_package(location: Optional[Path], wt_host: Path) -> Optional[tuple[str, str]]:
    """(import name, project name) of the nearest pyproject.toml with a ``[project]`` from ``location`` up to
    ``wt_host``: the project's own package folder or module in the checkout (flat or ``src`` layout), else
    its normalised name."""
    top = Path(wt_host)
    here = Path(location) if location is not None else top
    here = here if here.is_dir() else here.parent
    while True:
        found = _project(here / "pyproject.toml")
        if found is not None:
            return found
        if here == top or top not in here.parents:
            return None
        here = here.parent


def _project(path: Path) -> Optional[tuple[str, str]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    if not isinstance(name, str) or not name.strip():
        return None
    folder = path.parent
    candidates = [*_declared_packages(data.get("tool")), re.sub(r"[-.]+", "_", name.strip()).lower()]
    candidates = [c for c in candidates if _IDENT.fullmatch(c)]
    for cand in candidates:  # the one that is there, in either layout
        for base in (folder, folder / "src"):
            if (base / cand).is_dir() or (base / f"{cand}.py").is_file():
                return cand, name
    return (candidates[0], name) if candidates else None


def _declared_packages(tool: object) -> list[str]:
    """Top-level package names a build backend's table names (setuptools, hatch, flit)."""
    if not isinstance(tool, dict):
        return []
    out: list[str] = []
    setuptools = tool.get("setuptools")
    if isinstance(setuptools, dict) and isinstance(setuptools.get("packages"), list):
        out += [p.split(".")[0] for p in setuptools["packages"] if isinstance(p, str)]
    hatch = tool.get("hatch")
    wheel = hatch.get("build", {}).get("targets", {}).get("wheel", {}) if isinstance(hatch, dict) else {}
    if isinstance(wheel, dict) and isinstance(wheel.get("packages"), list):
        out += [p.rstrip("/").split("/")[-1] for p in wheel["packages"] if isinstance(p, str)]
    flit = tool.get("flit")
    module = flit.get("module", {}).get("name") if isinstance(flit, dict) and isinstance(flit.get("module"), dict) else None
    if isinstance(module, str):
        out.append(module)
    return out


def check_imports(under: UnderTest, wt: str, env: Mapping[str, str], lookup: Lookup, side: str = "") -> ImportCheck:
    """Where each package under test imports from with the command's environment ``env``; ``lookup`` asks
    the place (provenance.import_origin). ``side``: "base side: " for the base worktree of an A/B run."""
    result = ImportCheck()
    if not under.names:
        result.notes.append(under.source)
        return result
    for package in under.names:
        origin, why = lookup(package, env)
        if origin is None and not under.required:
            result.notes.append(f"{side}{package} ({under.source}) is not importable with the command's "
                                "environment: no package was checked")
            continue
        result.imports[package] = origin
        if not origin_inside(origin, wt):
            result.blocked.append(f"{side}" + (why or f"{package} imports from {origin}, outside the worktree {wt}/: "
                                  "the run would test another copy"))
    return result


def import_env(target: Target, wt: str, place) -> dict[str, str]:
    """The part of the command's environment that decides where Python imports from: its PYTHONPATH (the
    kind's before the place's own), the kind's variables and the declared ones (targets.RunEnvironment)."""
    return {"PYTHONPATH": pythonpath(target.kind, wt, place.pythonpath), **kind_env(target.kind, place.arch),
            **target.env}


def origin_inside(origin: Optional[str], wt: str) -> bool:
    if not origin:
        return False
    return origin == wt or origin.startswith(wt.rstrip("/") + "/")
