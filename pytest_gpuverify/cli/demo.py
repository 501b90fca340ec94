"""A simulated ROCm host with a real container: the demo, and the fixtures of the e2e tests.

Everything but the GPU is real: a Docker container made from ``docker import`` of an empty rootfs
with the host's ``/usr /lib /lib64 /bin /sbin /etc`` bound read-only (so it has Python and a shell),
real lock files, a real git checkout. The GPU tools are the simulator's, on PATH on the host and
bound into the container at the same path.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOTFS_IMAGE = "gpuverify-rootfs:1"
SANDBOX_LABEL = "gpuverify.sandbox"
HOST_DIRS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")
DEMO_REPOS = Path(__file__).resolve().parents[1] / "demo_repos"  # data, not modules
DEMO_REPO = DEMO_REPOS / "aiter"
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def ensure_rootfs_image(client) -> str:
    """Import an empty rootfs (a few directories) once; the host's dirs are bound at run time."""
    import docker.errors

    try:
        client.images.get(ROOTFS_IMAGE)
        return ROOTFS_IMAGE
    except docker.errors.ImageNotFound:
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("tmp", "root", "proc", "sys", "dev", "workspace", "opt"):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
    repo, tag = ROOTFS_IMAGE.split(":")
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=tag)
    return ROOTFS_IMAGE


def start_container(client, name: str, sim_bin: Path | None, mounts: dict[str, str], env: dict | None = None):
    """Run a long-lived container like a user's dev container. ``mounts``: host path -> container path."""
    volumes = {d: {"bind": d, "mode": "ro"} for d in HOST_DIRS if os.path.exists(d)}
    if sim_bin is not None:
        volumes[str(sim_bin)] = {"bind": str(sim_bin), "mode": "ro"}
    for host_path, container_path in mounts.items():
        volumes[str(host_path)] = {"bind": container_path, "mode": "rw"}
    environment = {"PATH": (f"{sim_bin}:" if sim_bin else "") + BASE_PATH, "HOME": "/root"}
    environment.update(env or {})
    return client.containers.run(
        ensure_rootfs_image(client),
        ["/bin/sleep", "infinity"],
        name=name,
        detach=True,
        volumes=volumes,
        environment=environment,
        labels={SANDBOX_LABEL: "1"},
    )


def remove_sandbox_containers(client, names: Iterable[str]) -> None:
    """Only containers this module made (they carry the sandbox label) are ever removed."""
    import docker.errors

    for name in names:
        try:
            container = client.containers.get(name)
        except docker.errors.NotFound:
            continue
        if container.labels.get(SANDBOX_LABEL) == "1":
            container.remove(force=True)


PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
OWN_ROOT = "# The demo repo's own pytest root: pytest takes no enclosing project's configuration for it.\n[pytest]\n"


def make_repo(dest: Path, source: Path = DEMO_REPO, own_root: bool = False) -> Path:
    """A git checkout of the demo aiter repo (committed, so it is clean). ``own_root``: it gets a
    ``pytest.ini`` where it has no pytest configuration, so that pytest run in it takes it as its
    rootdir, not a project it sits in (``.demo/`` in a clone of this one)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if own_root and not any((dest / name).exists() for name in PYTEST_CONFIGS):
        (dest / "pytest.ini").write_text(OWN_ROOT, encoding="utf-8")
    git = ["git", "-C", str(dest), "-c", "user.name=gpuverify", "-c", "user.email=gpuverify@localhost"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "demo repo"], check=True)
    return dest


@dataclass
class EnvSpec:
    tickets: Path
    repos: Path
    locks: Path
    repo_rows: list[tuple[str, Path, str | None, str]]  # repo, host path, container, mount
    containers: list[tuple[str, str]]  # name, image
    arch: str = "gfx942"
    gpus: int = 8
    picker: str = "builtin"
    hostname: str | None = None


def render_env_file(spec: EnvSpec) -> str:
    host = spec.hostname or socket.gethostname()
    lines = [
        "# mstack env",
        "",
        "Written by gpuverify's sandbox.",
        "",
        "## Resources",
        "",
        "| resource | path |",
        "|---|---|",
        f"| repos | {spec.repos} |",
        f"| tickets | {spec.tickets} |",
        "",
        "## Hosts",
        "",
        "| host | ssh alias | arch | gpus |",
        "|---|---|---|---|",
        f"| {host} | local | {spec.arch} | {spec.gpus} |",
        "",
        "## Repos",
        "",
        "| repo | path | container | mount |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r} | {p} | {c or 'not set'} | {m} |" for r, p, c, m in spec.repo_rows]
    lines += ["", "## Containers", "", "| name | image | host |", "|---|---|---|"]
    lines += [f"| {n} | {i} | {host} |" for n, i in spec.containers]
    lines += [
        "",
        "## GPU lock",
        "",
        "| host | picker | lock |",
        "|---|---|---|",
        f"| {host} | {spec.picker} | `flock -E 75 -w 600 {spec.locks}/gpu-<id>.lock` |",
        "",
    ]
    return "\n".join(lines)


def setup_sandbox(root: Path, client, container: str = "gpuverify-demo-aiter", gpus: int = 8, arch: str = "gfx942"):
    """The whole simulated host under ``root``; returns (env file, repo path, sim bin dir)."""
    from pytest_gpuverify.simulator import SimState, install

    root = root.resolve()
    sim_bin = root / "sim-bin"
    install(sim_bin, SimState.idle(gpus=gpus, arch=arch))
    for sub in ("tickets", "locks", "repos"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    repo = make_repo(root / "repos" / "aiter", own_root=True)
    remove_sandbox_containers(client, [container])
    start_container(client, container, sim_bin, {str(repo): "/workspace/aiter"})
    spec = EnvSpec(
        tickets=root / "tickets",
        repos=root / "repos",
        locks=root / "locks",
        repo_rows=[("aiter", repo, container, "/workspace/aiter")],
        containers=[(container, ROOTFS_IMAGE)],
        arch=arch,
        gpus=gpus,
    )
    env_path = root / "env.md"
    env_path.write_text(render_env_file(spec), encoding="utf-8")
    return env_path, repo, sim_bin


def sandbox_environ(sim_bin: Path, base: dict | None = None) -> dict[str, str]:
    """This process's environment with the simulated host's tools first on PATH, ROCM_PATH at them and
    GPUVERIFY_SYSFS_ROOT at its driver files: the readings come from its sysfs tree, as a ROCm host's
    come from the driver's, and the simulated amdsmi library is read in-process, as a ROCm install's."""
    from pytest_gpuverify.simulator.sysfs import LINK as SYSFS_LINK

    base = dict(os.environ if base is None else base)
    return dict(
        base,
        PATH=f"{sim_bin}:{base.get('PATH', BASE_PATH)}",
        ROCM_PATH=str(sim_bin),
        GPUVERIFY_SYSFS_ROOT=str(sim_bin / SYSFS_LINK),
    )


DEMO_TARGETS = ("op_tests/test_gemm_a8w8.py", "op_tests/test_rmsnorm2d.py", "op_tests/test_moe_2stage.py")


def run_demo(root: Path, ticket: str = "DEMO-1") -> int:
    from pytest_gpuverify.execute.container import docker_client

    client = docker_client()
    env_path, repo, sim_bin = setup_sandbox(root, client)
    env = dict(sandbox_environ(sim_bin), GPUVERIFY_ENV=str(env_path))
    from pytest_gpuverify.simulator.sysfs import LINK as SYSFS_LINK

    cmd = [sys.executable, "-m", "pytest", "--gpu-verify", "--ticket", ticket, "-p", "no:cacheprovider", *DEMO_TARGETS]
    print(
        f"$ cd {repo} && PATH={sim_bin}:$PATH ROCM_PATH={sim_bin} GPUVERIFY_SYSFS_ROOT={sim_bin / SYSFS_LINK} "
        f"GPUVERIFY_ENV={env_path} "
        f"pytest --gpu-verify --ticket {ticket} {' '.join(DEMO_TARGETS)}"
    )
    rc = subprocess.run(cmd, cwd=repo, env=env).returncode
    tickets = root.resolve() / "tickets" / ticket
    artifacts = sorted(tickets.glob("bench_*.json"))
    print(f"\nartifacts in {tickets}:")
    for path in artifacts:
        print(f"  {path.name}")
    if artifacts:
        from pytest_gpuverify.cli.show import render
        from pytest_gpuverify.records.artifact import read_artifact

        first = tickets / "bench_gemm_a8w8.json"
        print("\n$ gpuverify show " + str(first))
        print(render(read_artifact(first), first))
    # the demo has one target that must FAIL (test_moe_2stage exits 0 after a failed check)
    expected = {"bench_gemm_a8w8.json": "PASS", "bench_rmsnorm2d.json": "PASS", "bench_moe_2stage.json": "FAIL"}
    from pytest_gpuverify.records.artifact import read_artifact as _read

    got = {p.name: _read(p).verdict for p in artifacts if p.name in expected}
    ok = got == expected and rc == 1
    print(f"\ndemo {'OK' if ok else 'UNEXPECTED'}: verdicts {got}, pytest exit {rc}")
    return 0 if ok else 1


PYTEST_DISTS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")


def install_pytest(client, name: str, extra: tuple[str, ...] = ()) -> str:
    """Give a sandbox container pytest (real ROCm images have it): the host's pure-Python pytest and
    its needs, copied into the container's user site; ``extra``: more pure-Python distributions the
    host has (a pytest plugin: ``pytest-rerunfailures``). Returns that site directory."""
    import importlib.metadata as md

    container = client.containers.get(name)
    res = container.exec_run(["python3", "-c", "import site; print(site.getusersitepackages())"])
    site_dir = res.output.decode().strip().splitlines()[-1]
    container.exec_run(["mkdir", "-p", site_dir])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dist_name in (*PYTEST_DISTS, *extra):
            dist = md.distribution(dist_name)
            for file in dist.files or []:
                if "__pycache__" in file.parts or file.parts[0].endswith(".dist-info") and file.name == "RECORD":
                    continue
                path = Path(str(dist.locate_file(file)))  # a Path; typed as importlib's SimplePath
                if path.is_file() and not str(file).startswith(".."):
                    tar.add(path, arcname=str(file))
    container.put_archive(site_dir, buf.getvalue())
    return site_dir


def exec_commands(client, name: str, since: float) -> list[str]:
    """The command of every exec created in container ``name`` since ``since`` (epoch seconds).

    From the engine's event stream: ``ExecIDs`` of ``docker inspect`` forgets an exec once it has
    ended, so it cannot prove that none ran."""
    import time

    events = client.events(
        since=int(since) - 1,
        until=int(time.time()) + 1,
        decode=True,
        filters={"container": name, "event": "exec_create"},
    )
    since_ns = int(since * 1e9)  # the filter is in whole seconds; keep only what came after `since`
    return [
        e.get("Action", "").split(":", 1)[-1].strip() for e in events if int(e.get("timeNano", since_ns)) >= since_ns
    ]
