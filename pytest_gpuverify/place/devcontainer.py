"""Reading a ticket's devcontainer.json: where it is, what it names, what it mounts.

JSON with comments and trailing commas (json5), ``${localWorkspaceFolder}``-style variables,
``--name X`` / ``--name=X`` in ``runArgs`` (docker's parser: the last wins), ``workspaceMount`` and
``mounts`` as ``--mount`` strings or objects. Pure file reading; :mod:`.resolve` decides.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

Mount = tuple[str, str]  # (host path, container path)

MAX_CONFIG_BYTES = 1 << 20
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def find_config(folder: Path) -> tuple[Path | None, str | None]:
    """The devcontainer.json in spec precedence; (None, problem) when two sub-folders both hold one."""
    for candidate in (folder / ".devcontainer" / "devcontainer.json", folder / ".devcontainer.json"):
        if candidate.is_file():
            return candidate, None
    subs = sorted(p for p in (folder / ".devcontainer").glob("*/devcontainer.json") if p.is_file())
    if len(subs) > 1:
        shown = " and ".join(str(p) for p in subs[:3])
        return None, (f"ambiguous devcontainer configs for the ticket: {shown}. Fix: keep one, or pass --gpu-container")
    return (subs[0] if subs else None), None


def read_config(path: Path) -> tuple[dict, str | None]:
    """devcontainer.json is JSON with comments (and, in practice, trailing commas): json5 reads both."""
    import json5

    fix = "Fix: correct the file (JSON with comments), or pass --gpu-container"
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return {}, f"{path} is too big to be a devcontainer.json. {fix}"
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot read {path}: {exc}. {fix}"
    try:
        config = json5.loads(text)
    except Exception as exc:  # json5 raises ValueError; very deep nesting raises RecursionError
        why = str(exc).replace("<string>:", "line ")
        return {}, f"cannot parse {path}: {why}. {fix}"
    if not isinstance(config, dict):
        return {}, f"cannot parse {path}: the top level is not an object. {fix}"
    return config, None


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """Replace ``${localWorkspaceFolder}``-style variables in strings (lists walked); unknown ones stay."""
    if isinstance(value, list):
        return [substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, variables) for key, item in value.items()}
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        expr = match.group(1)
        if expr.startswith(("localEnv:", "env:")):
            var, _, default = expr.split(":", 1)[1].partition(":")
            return os.environ.get(var, default)
        return variables.get(expr, match.group(0))

    return _VARIABLE.sub(one, value)


def name_from_run_args(run_args: Any) -> str | None:
    """`--name=X` or `--name X` in runArgs (docker's flag parser: the last one wins)."""
    if not isinstance(run_args, list):
        return None
    name = None
    args = [str(a) for a in run_args]
    for i, arg in enumerate(args):
        if arg.startswith("--name="):
            name = arg[len("--name=") :]
        elif arg == "--name" and i + 1 < len(args):
            name = args[i + 1]
    return (name.strip() or None) if name is not None else None


def parse_mount(spec: Any) -> tuple[Mount | None, str | None]:
    """A `--mount` string (or the object form of `mounts`) -> (host, container) for a bind mount."""
    if not isinstance(spec, (dict, str)):
        return None, "it is neither a string nor an object"
    pairs = spec.items() if isinstance(spec, dict) else [p.partition("=")[::2] for p in next(csv.reader([spec]), [])]
    fields = {str(k).strip().lower(): str(v).strip() for k, v in pairs}
    source = fields.get("source") or fields.get("src")
    target = fields.get("target") or fields.get("destination") or fields.get("dst")
    kind = fields.get("type", "bind" if source and source.startswith("/") else "volume")
    if kind != "bind":
        return None, f"its type is {kind}, not a host folder"
    if not source or not target or not source.startswith("/"):
        return None, "it needs an absolute source= and a target="
    return (os.path.normpath(source), target), None


def devcontainer_mounts(
    config: dict, variables: dict[str, str], folder: Path, folder_in_container: str, config_file: Path, notes: list[str]
) -> list[Mount]:
    mounts: list[Mount] = []
    workspace_mount = substitute(config.get("workspaceMount"), variables)
    if workspace_mount:
        mount, why = parse_mount(workspace_mount)
        if mount:
            mounts.append(mount)
        else:
            notes.append(f"{config_file}: workspaceMount {workspace_mount!r} is not used: {why}")
    else:  # the CLI's default: the folder holding the config, at workspaceFolder
        mounts.append((str(folder), folder_in_container))
    extra = substitute(config.get("mounts"), variables)
    return mounts + [m for spec in (extra if isinstance(extra, list) else []) for m in [parse_mount(spec)[0]] if m]
