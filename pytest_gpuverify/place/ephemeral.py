"""Fresh containers: a Containers row named ``run`` (or ``run:<label>``) is not a container but an
image to start one from, per locked run, the way ``docker run --rm --device=/dev/kfd ...`` starts one by hand.

The container is started only once the run holds its GPUs' locks, with those GPUs' device files
(``/dev/kfd`` and each locked GPU's ``/dev/dri/renderD*`` node, read from the KFD topology; only the
ones that exist here, and the artifact says which were passed and which were not), the Repos row's
mount of the worktree and the row's own ``mounts``. It is removed before the locks are let go, also
after Ctrl-C or a failure. It is the only container the plugin ever removes, and only after checking
that it carries this run's labels: a container of the same name, or another session's, is never touched.
Its main process is a bounded ``sleep``, so one left by a ``kill -9`` of pytest stops by itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_gpuverify.config.containers import parse_env, parse_mounts
from pytest_gpuverify.records.builds import FreshContainerRecord

OWNER_LABEL = "gpuverify.ephemeral"  # "1" on every container this module starts
RUN_LABEL = "gpuverify.run"  # the run id of the session's run that started it
PID_LABEL = "gpuverify.pid"
KFD = "/dev/kfd"
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
START_WAIT_S = 10.0
LINGER_S = 600  # the main process outlives the command's time limit by this much, then exits


def render_nodes(indices: list[int], nodes_dir: str = KFD_NODES) -> dict[int, str]:
    """GPU index -> its ``/dev/dri/renderD<minor>``, from the KFD topology: GPU nodes (``gpu_id`` not
    0) in node order are the HIP indices, as ROCr enumerates them. Indices it cannot place are left out."""
    gpus = []
    try:
        nodes = sorted((int(n), n) for n in os.listdir(nodes_dir) if n.isdigit())
    except OSError:
        return {}
    for _, node in nodes:
        base = Path(nodes_dir, node)
        try:
            if int((base / "gpu_id").read_text().strip() or 0) == 0:
                continue
            props = dict(
                line.split()[:2] for line in (base / "properties").read_text().splitlines() if len(line.split()) >= 2
            )
            gpus.append(f"/dev/dri/renderD{int(props['drm_render_minor'])}")
        except (OSError, ValueError, KeyError):
            gpus.append("")
    return {i: gpus[i] for i in indices if i < len(gpus) and gpus[i]}


def device_plan(indices: list[int], vendor: str, nodes_dir: str = KFD_NODES) -> tuple[list[str], list[str], str | None]:
    """(devices passed, devices wanted but absent here, visible value inside when renumbered).

    ROCm: /dev/kfd and the locked GPUs' render nodes. ROCr lists only GPUs whose render node it can
    open, so with exactly these nodes inside the GPUs are 0..n-1 there. Missing files are not passed
    (a container without them sees no GPU) and are named, never invented. NVIDIA needs its runtime's
    device requests, which the plugin does not make: nothing is passed, and that is said."""
    if vendor != "rocm":
        return [], ["(NVIDIA GPUs need the NVIDIA container runtime; not requested)"], None
    passed: list[str] = []
    missing: list[str] = []
    (passed if os.path.exists(KFD) else missing).append(KFD)
    nodes = render_nodes(indices, nodes_dir)
    for index in indices:
        node = nodes.get(index)
        if node and os.path.exists(node):
            passed.append(node)
        else:
            missing.append(node or f"/dev/dri render node of GPU {index} (not in {nodes_dir})")
    renumbered = len(nodes) == len(indices) and all(os.path.exists(n) for n in nodes.values()) and KFD in passed
    return passed, missing, ",".join(str(i) for i in range(len(indices))) if renumbered else None


def image_facts(client: Any, image: str) -> tuple[str | None, list[str], str | None]:
    """(image id, repo digests, problem) of a local image; a missing one is a problem, never pulled here."""
    import docker.errors

    try:
        info = client.api.inspect_image(image)
    except docker.errors.ImageNotFound:
        return None, [], f"image {image} of the `run` row is not on this host. Fix: `docker pull {image}`"
    except (docker.errors.DockerException, OSError) as exc:
        return None, [], f"cannot inspect image {image}: {exc}. Fix: check the Docker Engine"
    return info.get("Id"), list(info.get("RepoDigests") or []), None


def remove_own(client: Any, ident: str, run_id: str) -> bool:
    """Remove the container only when it carries this run's labels; True once it is gone."""
    import docker.errors

    try:
        info = client.api.inspect_container(ident)
    except docker.errors.NotFound:
        return True
    except (docker.errors.DockerException, OSError):
        return False
    labels = (info.get("Config") or {}).get("Labels") or {}
    if labels.get(OWNER_LABEL) != "1" or labels.get(RUN_LABEL) != run_id:
        return False  # not ours: never removed
    try:
        client.api.remove_container(info["Id"], force=True, v=True)
    except docker.errors.NotFound:
        pass
    except (docker.errors.DockerException, OSError):
        return False
    return True


@contextmanager
def fresh_container(
    client: Any,
    row: Any,
    mounts: list[tuple[str, str]],
    indices: list[int],
    vendor: str,
    run_id: str,
    limit_s: float,
    problems: list[str],
) -> Iterator[FreshContainerRecord | None]:
    """Start the row's image with the locked GPUs and ``mounts`` (host -> container, the worktree's),
    yield its record (None, with the reason in ``problems``, when it could not start), remove it after."""
    import docker.errors

    record = FreshContainerRecord(row=row.name, name=f"gpuverify-run-{run_id}", image=row.image)
    record.image_id, record.repo_digests, problem = image_facts(client, row.image)
    if problem:
        problems.append(problem)
        yield None
        return
    record.devices, record.devices_missing, record.visible = device_plan(indices, vendor)
    binds = {}
    for host, inside, mode in [*((h, c, "rw") for h, c in mounts), *parse_mounts(row.mounts)]:
        binds[host] = {"bind": inside, "mode": mode}
        record.mounts.append(f"{host}:{inside}:{mode}")
    env = parse_env(row.env)
    if record.visible is not None:  # the command's own HIP_VISIBLE_DEVICES says the same
        env.update(HIP_VISIBLE_DEVICES=record.visible, ROCR_VISIBLE_DEVICES=record.visible)
    try:
        created = client.api.create_container(
            row.image,
            ["sleep", str(int(limit_s) + LINGER_S)],
            name=record.name,
            detach=True,
            environment=env,
            labels={OWNER_LABEL: "1", RUN_LABEL: run_id, PID_LABEL: str(os.getpid())},
            host_config=client.api.create_host_config(
                binds=binds,
                devices=[f"{d}:{d}:rwm" for d in record.devices],
                group_add=["video"] if record.devices else None,
            ),
        )
        record.id = created.get("Id")
    except (docker.errors.DockerException, OSError) as exc:
        problems.append(
            f"could not create a container from {row.image} (Containers row {row.name}): {exc}. "
            "Fix: check the image and the row's mounts"
        )
        yield None
        return
    try:
        problem = _start(client, record)
        if problem:
            problems.append(problem)
            yield None
        else:
            yield record
    finally:
        record.removed = remove_own(client, record.id or record.name, run_id)


def _start(client: Any, record: FreshContainerRecord) -> str | None:
    import docker.errors

    try:
        client.api.start(record.id)
    except (docker.errors.DockerException, OSError) as exc:
        return (
            f"fresh container {record.name} from {record.image} did not start: {exc}. Fix: check the image and mounts"
        )
    deadline = time.monotonic() + START_WAIT_S
    while True:
        state = client.api.inspect_container(record.id).get("State") or {}
        if state.get("Running"):
            image = client.api.inspect_container(record.id).get("Image")
            if record.image_id and image != record.image_id:  # the tag moved between inspect and create
                return (
                    f"fresh container {record.name} runs image {image}, not {record.image_id} as inspected. Fix: retry"
                )
            return None
        if state.get("Status") in ("exited", "dead") or time.monotonic() > deadline:
            logs = client.api.logs(record.id, tail=5).decode("utf-8", "replace").strip()
            return (
                f"fresh container {record.name} from {record.image} exited at start (status {state.get('Status')}, "
                f"exit code {state.get('ExitCode')}{': ' + logs if logs else ''}). Fix: the image needs `sleep`"
            )
        time.sleep(0.05)


def started_note(record: FreshContainerRecord) -> str:
    """The artifact's note of a fresh container: what was started from which row, and its devices."""
    missing = f"; not on this host: {', '.join(record.devices_missing)}" if record.devices_missing else ""
    return (
        f"fresh container {record.name} from {record.image} (Containers row {record.row}); devices "
        f"passed: {', '.join(record.devices) or 'none'}{missing}"
    )
