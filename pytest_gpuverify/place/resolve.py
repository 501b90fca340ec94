"""Which of the user's containers runs a ticket's targets (docs/containers.md, "Which container").

Order: ``--gpu-container``, then the ticket's devcontainer.json, then the Repos row's container, then
one running container of the Containers table that matches the ticket key or the row's image. Every
candidate, whatever its source, must be in the Containers table, on this host, and exist; a stopped
one is started only with ``--gpu-start-container``. Anything else is a one-line ``problem`` (the
target is INCONCLUSIVE) that names the candidates and the fix, never a guess.

Here we only read ``docker ps``/``docker inspect`` data. The one write is ``docker start`` of a
container of the user's table, under ``allow_start``. Nothing is exec'd, stopped or removed.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pytest_gpuverify.config.containers import is_run_name, runs_on_host
from pytest_gpuverify.config.envfile import ContainerRow, EnvFile, RepoRow
from pytest_gpuverify.place.devcontainer import (
    Mount,
    devcontainer_mounts,
    find_config,
    name_from_run_args,
    read_config,
    substitute,
)

Source = Literal["option", "devcontainer", "repos", "running"]
PathLike = str | os.PathLike

LOCAL_FOLDER_LABEL = "devcontainer.local_folder"  # set by the devcontainers CLI on what it creates
CONFIG_FILE_LABEL = "devcontainer.config_file"
START_WAIT_S = 10.0
NOTHING_FIX = (
    "Fix: set the Repos row's container, add .devcontainer/devcontainer.json to the ticket, or pass --gpu-container"
)


@dataclass
class Resolution:
    name: str | None = None  # None with no problem only for `--gpu-container none` (the host)
    source: Source | None = None  # None when nothing was found
    mounts: list[Mount] = field(default_factory=list)  # host -> container, for the worktree
    problem: str | None = None  # one line: why no usable container, and the fix
    started: bool = False  # we started the user's stopped container (allow_start)
    notes: list[str] = field(default_factory=list)
    image: str | None = None  # Config.Image of the container, from docker inspect
    config_file: Path | None = None  # the devcontainer.json that named it
    fresh: ContainerRow | None = None  # a `run` row: a container is started per locked run (ephemeral.py)

    @property
    def ok(self) -> bool:
        return self.problem is None


def resolve_container(
    env: EnvFile,
    *,
    ticket: str | None,
    repo_row: RepoRow | None,
    target_path: PathLike | None,
    docker_client: Any,
    override: str | None = None,
    allow_start: bool = False,
    host_name: str | None = None,
) -> Resolution:
    """Pick the container for one target; ``host_name`` is this host's row (default: the hostname)."""
    import docker.errors

    host = host_name or socket.gethostname()
    repo_mounts = _repo_mounts(repo_row)
    found: Resolution | None
    if override is not None and override.strip():
        override = override.strip()
        if runs_on_host(override):
            return Resolution(None, "option", [], notes=["--gpu-container none: commands run on the host itself"])
        found = Resolution(override, "option", repo_mounts)
        origin = "from --gpu-container"
    else:
        notes: list[str] = []
        try:
            found = _from_devcontainer(env, ticket, docker_client, notes)
            origin = f"named by {found.config_file}" if found is not None else ""
            if found is None and repo_row is not None and repo_row.container:
                found = Resolution(repo_row.container, "repos", repo_mounts)
                origin = f"the container of Repos row {repo_row.repo}"
            if found is None:
                found = _from_running(env, ticket, docker_client, host, repo_row, repo_mounts)
                origin = "a running container of the Containers table"
        except (docker.errors.DockerException, OSError) as exc:  # requests' errors are OSErrors
            found = Resolution(
                problem=f"cannot list containers through the Docker Engine: {exc}. "
                "Fix: start Docker, or pass --gpu-container"
            )
        found.notes[:0] = notes
    if found.problem is None:
        found.notes.append(f"container {found.name} ({found.source}: {origin})")
        _check(env, found, origin, docker_client, host, allow_start, target_path)
    if found.problem:
        found.problem = " ".join(found.problem.split())
    return found


def map_to_container(mounts: Iterable[tuple[PathLike, str]], host_path: PathLike) -> str | None:
    """The container path of ``host_path``: the longest mount source holding it (whole components)."""
    target = Path(os.path.expanduser(host_path)).resolve()
    best: tuple[int, str] | None = None
    for source, dest in mounts:
        root = Path(os.path.expanduser(source)).resolve()
        if target == root or root in target.parents:
            rel = target.relative_to(root).parts
            mapped = str(PurePosixPath(dest, *rel)) if rel else str(PurePosixPath(dest))
            if best is None or len(root.parts) > best[0]:
                best = (len(root.parts), mapped)
    return best[1] if best else None


def bind_mounts(info: dict) -> list[Mount]:
    """A container's bind mounts (host -> container), from its ``docker inspect``."""
    return [
        (str(m["Source"]), str(m["Destination"]))
        for m in info.get("Mounts") or []
        if m.get("Type") == "bind" and m.get("Source") and m.get("Destination")
    ]


# -- sources ------------------------------------------------------------------------------------
def _repo_mounts(row: RepoRow | None) -> list[Mount]:
    return [(str(Path(row.path).expanduser()), row.mount)] if row and row.path and row.mount else []


def _from_devcontainer(env: EnvFile, ticket: str | None, client: Any, notes: list[str]) -> Resolution | None:
    if env.resources.tickets is None or not ticket:
        return None
    folder = Path(os.path.abspath(Path(env.resources.tickets).expanduser() / ticket))
    config_file, problem = find_config(folder)
    if problem:
        return Resolution(source="devcontainer", problem=problem)
    if config_file is None:
        return None
    config, problem = read_config(config_file)
    if problem:
        return Resolution(source="devcontainer", problem=problem, config_file=config_file)
    variables = {"localWorkspaceFolder": str(folder), "localWorkspaceFolderBasename": folder.name}
    folder_in_container = substitute(config.get("workspaceFolder"), variables)
    if not isinstance(folder_in_container, str) or not folder_in_container:
        folder_in_container = f"/workspaces/{folder.name}"
    variables["containerWorkspaceFolder"] = folder_in_container
    mounts = devcontainer_mounts(config, variables, folder, folder_in_container, config_file, notes)
    name = name_from_run_args(substitute(config.get("runArgs"), variables))
    found = Resolution(name, "devcontainer", mounts, config_file=config_file)
    if name:
        return found
    # no --name: the devcontainers CLI labels what it creates with the folder holding the config
    folders = {str(folder), os.path.realpath(folder)}
    listed = {
        c["Id"]: c
        for value in sorted(folders)
        for c in client.api.containers(all=True, filters={"label": f"{LOCAL_FOLDER_LABEL}={value}"})
    }
    hits = list(listed.values())
    if len(hits) > 1:  # several configs in one folder: the config_file label tells them apart
        configs = {str(config_file), os.path.realpath(config_file)}
        narrowed = [c for c in hits if (c.get("Labels") or {}).get(CONFIG_FILE_LABEL) in configs]
        hits = narrowed or hits
    names = sorted(_names(c)[0] for c in hits if _names(c))
    if len(names) > 1:
        both = "both" if len(names) == 2 else "all"
        found.problem = (
            f"ambiguous: {_and(names)} {both} carry the label {LOCAL_FOLDER_LABEL}={folder} "
            f"({config_file} sets no --name); pass --gpu-container"
        )
        return found
    if names:
        found.name = names[0]
        notes.append(
            f"{config_file} sets no --name in runArgs; found {names[0]} by its label {LOCAL_FOLDER_LABEL}={folder}"
        )
        return found
    notes.append(
        f"{config_file} sets no --name in runArgs and no container is labelled "
        f"{LOCAL_FOLDER_LABEL}={folder}; it names no container"
    )
    return None


def _names(listed: dict) -> list[str]:
    return [n.lstrip("/") for n in listed.get("Names") or [] if "/" not in n.lstrip("/")]


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _normal_image(ref: str) -> str:
    ref = re.sub(r"^(?:(?:index\.)?docker\.io/)?(?:library/)?", "", ref.strip())
    last = ref.rsplit("/", 1)[-1]
    return ref if "@" in ref or ":" in last or ref.startswith("sha256:") else ref + ":latest"


def _host_ok(row: ContainerRow, host: str) -> bool:
    from pytest_gpuverify.config.hosts import serves_host

    return serves_host(row.host, host)


def names_ticket(text: str, ticket: str) -> bool:
    """The ticket key stands in ``text`` as a word of its own (any case): ``aiter-T-1`` names T-1,
    but neither ``gv-test-10`` (``...t-1`` inside a word) nor ``aiter-T-10`` does."""
    pattern = r"(?<![0-9a-z])" + re.escape(ticket.casefold()) + r"(?![0-9a-z])"
    return re.search(pattern, text.casefold()) is not None


def _from_running(
    env: EnvFile, ticket: str | None, client: Any, host: str, repo_row: RepoRow | None, repo_mounts: list[Mount]
) -> Resolution:
    """A running container of the table matched by ticket key (name or image) or by the row's image."""
    import docker.errors

    rows = {row.name: row for row in env.containers if _host_ok(row, host)}
    image_ids: dict[str, str | None] = {}
    by_key: list[str] = []
    by_image: list[str] = []
    stopped: list[str] = []
    for listed in client.api.containers(all=True):
        name = next((n for n in _names(listed) if n in rows), None)
        if name is None:
            continue
        row, image = rows[name], str(listed.get("Image") or "")
        key_hit = bool(ticket and names_ticket(f"{name}\n{image}", ticket))
        image_hit = False
        if row.image:
            if row.image not in image_ids:
                try:
                    image_ids[row.image] = client.api.inspect_image(row.image).get("Id")
                except (docker.errors.DockerException, OSError):
                    image_ids[row.image] = None
            image_hit = (
                _normal_image(row.image) == _normal_image(image)
                or image_ids[row.image] is not None
                and image_ids[row.image] == listed.get("ImageID")
            )
        if listed.get("State") != "running":
            if key_hit and listed.get("State") in ("created", "exited"):
                stopped.append(name)
            continue
        if key_hit:
            by_key.append(name)
        elif image_hit:
            by_image.append(name)
    # a key match is the stronger evidence; within one tier, two or more is never a guess
    for hits, why in ((sorted(by_key), str(ticket)), (sorted(by_image), "the image of their Containers row")):
        if len(hits) == 1:
            return Resolution(
                hits[0],
                "running",
                repo_mounts,
                notes=[f"{hits[0]} is the one running container of the Containers table that matches {why}"],
            )
        if hits:
            both = "both match" if len(hits) == 2 else "all match"
            return Resolution(source="running", problem=f"ambiguous: {_and(hits)} {both} {why}; pass --gpu-container")
    where = f"ticket {ticket}" if ticket else "this run (no --ticket)"
    repo = f", Repos row {repo_row.repo} sets no container" if repo_row is not None else ""
    extra = (
        (
            f" (stopped and matching: {_and(sorted(stopped))}; start one with `docker start {sorted(stopped)[0]}` "
            "or --gpu-start-container and pass --gpu-container)"
        )
        if stopped
        else ""
    )
    return Resolution(
        problem=f"no container found for {where}{repo}, and no running container of the "
        f"Containers table of {env.path} matches it{extra}. {NOTHING_FIX}"
    )


# -- checks on the chosen candidate --------------------------------------------------------------
def _check(
    env: EnvFile, res: Resolution, origin: str, client: Any, host: str, allow_start: bool, target_path: PathLike | None
) -> None:
    import docker.errors

    name = res.name or ""
    row = env.container(name)
    if row is None:
        res.problem = (
            f"container {name} ({origin}) is not in the Containers table of {env.path}: it is not "
            "yours, so it gets no exec and is not started. Fix: add it to the Containers table if it "
            "is yours, or pass --gpu-container NAME"
        )
        return
    if not _host_ok(row, host):
        res.problem = (
            f"container {name} ({origin}) belongs to host {row.host} in the Containers table of "
            f"{env.path}, not to this host {host}. Fix: run on {row.host}, or pass --gpu-container"
        )
        return
    if is_run_name(name):  # nothing to inspect: started from the row's image once the GPUs are locked
        res.fresh, res.image = row, row.image
        return
    info = _inspect(client, name)
    if isinstance(info, str):
        res.problem = f"container {name} ({origin}) {info}"
        return
    res.image = (info.get("Config") or {}).get("Image")
    state = info.get("State") or {}
    if state.get("Paused"):
        res.problem = f"container {name} is paused. Fix: `docker unpause {name}`, or pass --gpu-container"
        return
    if state.get("Restarting"):
        res.problem = f"container {name} is restarting. Fix: see `docker logs {name}`, then retry"
        return
    if not state.get("Running"):
        if not allow_start:
            res.problem = f"container {name} is stopped. Fix: `docker start {name}`, or pass --gpu-start-container"
            return
        try:
            client.api.start(name)
        except (docker.errors.DockerException, OSError) as exc:
            res.problem = f"could not start container {name}: {exc}. Fix: `docker start {name}` and read its error"
            return
        res.started = True
        res.notes.append(f"started stopped container {name} (--gpu-start-container)")
        info = _wait_running(client, name)
        if isinstance(info, str):
            res.problem = f"container {name} {info}"
            return
    _check_mounts(res, info, origin, target_path)


def _inspect(client: Any, name: str) -> dict | str:
    """docker inspect data, or the reason as the end of a sentence. An ID-prefix hit does not count."""
    import docker.errors

    missing = (
        "does not exist on this host. Fix: create it (for a devcontainer: `devcontainer up "
        "--workspace-folder <ticket dir>`), or pass --gpu-container"
    )
    try:
        info = client.api.inspect_container(name)
    except docker.errors.NotFound:
        return missing
    except (docker.errors.DockerException, OSError) as exc:
        return f"cannot be inspected: {exc}. Fix: check the Docker Engine, or pass --gpu-container"
    return info if str(info.get("Name", "")).lstrip("/") == name else missing


def _wait_running(client: Any, name: str) -> dict | str:
    deadline = time.monotonic() + START_WAIT_S
    while True:
        info = _inspect(client, name)
        if isinstance(info, str):
            return info
        state = info.get("State") or {}
        if state.get("Running") and not state.get("Restarting"):
            return info
        if state.get("Status") in ("exited", "dead") or time.monotonic() > deadline:
            return (
                f"did not stay running after `docker start` (status {state.get('Status')}, exit code "
                f"{state.get('ExitCode')}). Fix: see `docker logs {name}`"
            )
        time.sleep(0.1)


def _check_mounts(res: Resolution, info: dict, origin: str, target_path: PathLike | None) -> None:
    """The declared mapping must agree with the container's real bind mounts for the target."""
    if target_path is None:
        return
    binds = bind_mounts(info)
    declared = map_to_container(res.mounts, target_path)
    actual = map_to_container(binds, target_path)
    if actual is None:
        said = f"; {origin} maps it to {declared}" if declared else ""
        res.problem = (
            f"{target_path} is not in any folder bind-mounted into container {res.name}{said}. "
            "Fix: mount the repo into the container (Repos row mount, devcontainer workspaceMount), "
            "or pass --gpu-container"
        )
    elif declared != actual:
        said = f"not at {declared} as {origin} says" if declared else f"which {origin} does not map"
        res.notes.append(
            f"container {res.name} mounts {target_path} at {actual}, {said}; using the bind "
            "mounts that docker inspect shows"
        )
        res.mounts = binds
