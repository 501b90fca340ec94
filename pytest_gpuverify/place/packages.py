"""The packages under test: which import packages a target's command must take from its worktree.

A declaration's ``packages`` wins; else the kind's own (``aiter``, ``flydsl``); else the project of the
nearest ``pyproject.toml`` between the target and its worktree's top (its import name, flat or ``src``
layout); else none, said in a note. Each is looked up before the run from ``/`` with the command's own import rules (the folders it puts
first: import_rules.py; its PYTHONPATH before the place's own), in the container or on the host: the
prediction. The run itself records where each was really imported from (import_probe.py), and that
record decides (:func:`settle_imports`): one imported from outside the worktree means the run tested
another copy, and is not a PASS; one imported from the worktree is never refused.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.config.targets import Target, import_package, kind_env, pythonpath
from pytest_gpuverify.place.import_probe import Observed
from pytest_gpuverify.records.artifact import ImportOrigin

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
Lookup = Callable[[str, Mapping[str, str]], tuple[str | None, str | None]]  # (package, env) -> (origin, why)


@dataclass(frozen=True)
class UnderTest:
    names: tuple[str, ...]
    source: str  # "declaration", "the aiter-op-test kind", "pyproject.toml project 'x'", or why none
    required: bool  # declared or the kind's: not importable at all blocks the run; a pyproject guess only notes it


@dataclass
class ImportCheck:
    imports: dict[str, str | None] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def packages_under_test(target: Target, wt_host: Path) -> UnderTest:
    if target.packages is not None and not target.packages:  # the import check turned off, on purpose
        return UnderTest((), "no package under test was checked: the declaration says packages = []", False)
    if target.packages is not None:
        return UnderTest(target.packages, "declaration", True)
    own = import_package(target.kind)
    if own:
        return UnderTest((own,), f"the {target.kind} kind", True)
    found = pyproject_package(target.location, wt_host)
    if found is not None:
        name, project = found
        return UnderTest((name,), f"pyproject.toml project {project!r}", False)
    return UnderTest(
        (),
        "no package under test was checked: the target's kind has none and no pyproject.toml "
        'names a project; declare packages = ["<import name>"] to check one',
        False,
    )


def pyproject_package(location: Path | None, wt_host: Path) -> tuple[str, str] | None:
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


def _project(path: Path) -> tuple[str, str] | None:
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
    module = (
        flit.get("module", {}).get("name") if isinstance(flit, dict) and isinstance(flit.get("module"), dict) else None
    )
    if isinstance(module, str):
        out.append(module)
    return out


def check_imports(
    under: UnderTest, wt: str, env: Mapping[str, str], lookup: Lookup, side: str = "", observe: bool = False
) -> ImportCheck:
    """Where each package under test imports from with the command's environment ``env``; ``lookup`` asks
    the place (provenance.import_origin, with the folders the command puts before its PYTHONPATH).
    ``side``: "base side: " for the base worktree of an A/B run. ``observe``: the run records its own
    imports (import_probe.py), and that record decides: a prediction outside the worktree, or of a package
    that cannot be imported, does not keep the command from running (settle_imports decides after it)."""
    result = ImportCheck()
    if not under.names:
        result.notes.append(under.source)
        return result
    for package in under.names:
        origin, why = lookup(package, env)
        if origin is None and not under.required and not observe:
            result.notes.append(
                f"{side}{package} ({under.source}) is not importable with the command's "
                "environment: no package was checked"
            )
            continue
        result.imports[package] = origin
        if observe or origin_inside(origin, wt):
            continue
        result.blocked.append(
            f"{side}"
            + (why or f"{package} imports from {origin}, outside the worktree {wt}/: the run would test another copy")
        )
    return result


def checkout_copy(package: str, wt_host: Path, wt: str, front: Sequence[str] = ()) -> str | None:
    """The worktree's own copy of ``package`` (its ``__init__.py``, or its module), as the place sees it: in
    a folder the command puts first, else the worktree's top, its ``src`` or ``python`` folder."""
    folders = [f for f in front if origin_inside(f, wt)] + [wt, f"{wt}/src", f"{wt}/python"]
    for folder in dict.fromkeys(folders):
        rel = folder[len(wt) :].lstrip("/")
        base = Path(wt_host) / rel
        for name in (f"{package}/__init__.py", f"{package}.py"):
            if (base / name).is_file():
                return f"{folder.rstrip('/')}/{name}"
    return None


def origin_records(
    under: UnderTest,
    predicted: Mapping[str, str | None],
    front: Sequence[str],
    observed: Observed | None,
    why_not: str | None,
    checkout: Mapping[str, str | None],
) -> dict[str, ImportOrigin]:
    """Each package under test's record: the prediction and what the run's processes recorded (``observed``;
    None, with ``why_not``, when nothing could be read back)."""
    records = {}
    for package in under.names:
        record = ImportOrigin(
            predicted=predicted.get(package), predicted_path=list(front), checkout=checkout.get(package)
        )
        if observed is not None and observed.recorded:
            seen = observed.origins.get(package, [])
            record.processes = observed.processes
            record.seen = "imported" if seen else "not imported"
            record.observed, record.also_observed = (seen[0], seen[1:]) if seen else (None, [])
        else:
            record.why_not_recorded = (
                observed.problem if observed is not None and observed.problem else why_not
            ) or NOT_RECORDED
        records[package] = record
    return records


NOT_RECORDED = (
    "no Python process of the command recorded its imports (it ran none, or each was started with -I, "
    "-E or -S, or ended without exiting normally)"
)


def settle_imports(
    records: Mapping[str, ImportOrigin], wt: str, required: bool, side: str = ""
) -> tuple[dict[str, str | None], list[str], list[str]]:
    """(imports, reasons, notes): the origin each package under test was taken from (the run's own record;
    where it has none, or the command never imported the package, the prediction), a reason for each
    taken from outside the worktree ``wt`` (the run tested another copy: not a PASS), and notes.
    ``required``: declared or the kind's own package; a package guessed from pyproject.toml that neither
    the prediction nor the run found is left out. The engine and ``gpuverify check`` both call this."""
    imports: dict[str, str | None] = {}
    reasons: list[str] = []
    notes: list[str] = []
    for package, r in records.items():
        own = f"its own {r.checkout}" if r.checkout else "the worktree, which holds no copy of it"
        if r.seen == "imported":
            imports[package] = r.observed
            outside = [o for o in [r.observed, *r.also_observed] if o and not origin_inside(o, wt)]
            if outside:
                reasons.append(
                    f"{side}{package} was imported from {outside[0]}, outside the worktree {wt}/, not from "
                    f"{own}: the run tested another copy"
                )
            elif not origin_inside(r.predicted, wt):
                predicted = f"from {r.predicted}" if r.predicted else "not importable"
                notes.append(
                    f"{side}{package}: predicted {predicted}, but the run imported it from {r.observed}: "
                    "the run's own record decides"
                )
            continue
        if r.seen == "not imported":  # no copy was tested: the prediction is kept, and the note says so
            if r.predicted is not None or required:
                imports[package] = r.predicted
            notes.append(
                f"{side}{package} was not imported by the command ({r.processes} Python process"
                f"{'es' if r.processes != 1 else ''} recorded their imports)"
            )
            continue
        if r.predicted is None and not required:
            notes.append(
                f"{side}{package} is not importable with the command's import path and the run did not "
                f"record its imports ({r.why_not_recorded}): no package was checked"
            )
            continue
        imports[package] = r.predicted
        if r.predicted is None:
            reasons.append(
                f"{side}{package} is not importable with the command's import path, and the run did not "
                f"record its imports: {r.why_not_recorded}"
            )
        elif not origin_inside(r.predicted, wt):
            reasons.append(
                f"{side}{package} imports from {r.predicted}, outside the worktree {wt}/, not from {own}: "
                f"the run would test another copy (predicted; the run did not record its imports: "
                f"{r.why_not_recorded})"
            )
    return imports, reasons, notes


def import_env(target: Target, wt: str, place) -> dict[str, str]:
    """The part of the command's environment that decides where Python imports from: its PYTHONPATH (the
    kind's before the place's own), the kind's variables and the declared ones (targets.RunEnvironment)."""
    return {
        "PYTHONPATH": pythonpath(target.kind, wt, place.pythonpath),
        **kind_env(target.kind, place.arch),
        **target.env,
    }


def origin_inside(origin: str | None, wt: str) -> bool:
    if not origin:
        return False
    return origin == wt or origin.startswith(wt.rstrip("/") + "/")
