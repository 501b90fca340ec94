"""Shared fixtures: a real Docker Engine, a simulated ROCm host, a git checkout, an env file."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from sandboxes import make_sandbox
from sshd_hosts import ssh_hosts, sshd_unavailable

from pytest_gpuverify.cli import demo

# The sessions these tests start leave background samplers (readings_daemon.py) behind, one per test
# host: on this short-lived host they leave after 15 s without a reader, not five minutes.
os.environ.setdefault("GPUVERIFY_SAMPLER_IDLE_S", "15")


@pytest.fixture(scope="session")
def docker_client():
    """The real engine. In CI (.ci/run starts it) a missing engine is an error, never a skip."""
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # no daemon here: skip locally, fail in CI
        if os.environ.get("CI"):
            pytest.fail(f"Docker Engine not reachable in CI: {exc}")
        pytest.skip(f"no Docker Engine: {exc}")
    demo.ensure_rootfs_image(client)
    return client


@pytest.fixture(scope="session")
def postgres():
    """A private PostgreSQL cluster (tests/support/postgres_cluster.py) for the session. In CI (.ci/run
    installs the server) a missing or failing server is an error, never a skip."""
    from postgres_cluster import running_cluster

    try:
        cluster = running_cluster()
        found = cluster.__enter__()
    except RuntimeError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL cannot start in CI: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield found
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_name(request, tmp_path) -> str:
    """A new, empty history store as ``--store`` names it: a SQLite file, or a PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "history.db")
    cluster = request.getfixturevalue("postgres")
    return cluster.create_database(f"h_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def sandbox(tmp_path, docker_client):
    with make_sandbox(tmp_path / "host", docker_client) as box:
        yield box


@pytest.fixture
def flydsl(sandbox):
    """A FlyDSL checkout and its own container (with pytest, as real ROCm images have)."""
    repo = demo.make_repo(sandbox.root / "repos" / "FlyDSL", demo.DEMO_REPOS / "flydsl")
    name = f"gv-fly-{uuid.uuid4().hex[:8]}"
    sandbox.start_container(name, mounts={str(repo): "/workspace/FlyDSL"})
    demo.install_pytest(sandbox.client, name)
    sandbox.rewrite_env(
        repo_rows=[*sandbox.spec.repo_rows, ("FlyDSL", repo, name, "/workspace/FlyDSL")],
        containers=[*sandbox.spec.containers, (name, demo.ROOTFS_IMAGE)],
    )
    return repo


@pytest.fixture
def two_hosts(tmp_path_factory, docker_client):
    """hostA and hostB, 2 simulated GPUs each."""
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    with ssh_hosts(tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 2), ("hostB", 2)]) as hosts:
        yield hosts


# -- a second Unix user -------------------------------------------------------------------------

PEER = "gpuverify-peer"
# what the peer's Python must import: the plugin's dependencies, as the running interpreter has them
PEER_IMPORTS = (
    "pytest",
    "xdist",
    "pydantic",
    "docker",
    "filelock",
    "json5",
    "hyperscan",
    "sqlalchemy",
    "alembic.command",  # the history store's migrations (and what they import: mako)
    "pytest_gpuverify.history.db",
    "pytest_gpuverify.plugin",
    "pytest_gpuverify.engine.session",
    "pytest_gpuverify.execute.container",
    "pytest_gpuverify.cli.doctor",
)


@pytest.fixture(scope="session")
def world_base():
    """A folder under /tmp every user can read (pytest's tmp_path is root's 0700 folder)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="gpuverify-world-", dir="/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def world_dir(world_base):
    path = world_base / uuid.uuid4().hex[:8]
    path.mkdir()
    os.chmod(path, 0o755)
    return path


@dataclass
class UnixUser:
    name: str
    uid: int
    gid: int
    home: Path
    python: str
    pythonpath: str

    def env(self, **extra: str) -> dict:
        return {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "PYTHONPATH": self.pythonpath,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "LANG": "C.UTF-8",
            **extra,
        }

    def run(self, argv, cwd=None, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        argv = [self.python if a == "python3" else a for a in argv]
        return subprocess.run(
            argv,
            cwd=cwd,
            env=self.env(**(env or {})),
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            timeout=timeout,
        )

    def popen(self, argv, env: dict | None = None, **kwargs) -> subprocess.Popen:
        return subprocess.Popen(
            argv, env=self.env(**(env or {})), user=self.uid, group=self.gid, extra_groups=[], **kwargs
        )


@pytest.fixture(scope="session")
def second_user(world_base):
    """Another Unix user of this host, made here with useradd (we are root here and in CI), with a
    Python that imports this checkout of the plugin and its dependencies."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("a second Unix user needs root to create it (useradd)")
    created = False
    try:
        entry = pwd.getpwnam(PEER)
    except KeyError:
        proc = subprocess.run(["useradd", "-M", "-s", "/bin/sh", PEER], capture_output=True)
        if proc.returncode != 0:
            pytest.fail(f"useradd {PEER} failed: {proc.stderr.decode()}")
        created, entry = True, pwd.getpwnam(PEER)
    home = world_base / "peer-home"
    home.mkdir(exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    python, pythonpath = _peer_python(world_base, entry)
    yield UnixUser(PEER, entry.pw_uid, entry.pw_gid, home, python, pythonpath)
    if created:
        subprocess.run(["userdel", PEER], capture_output=True)


def _peer_python(base: Path, entry) -> tuple[str, str]:
    """This checkout's package copied where the peer reads it; the running interpreter when the peer
    can run it with every dependency, else a system Python of the same version with a copy of the
    dependencies (a pyenv under /root, 0700, is out of the peer's reach)."""
    import json
    import shutil

    import pytest_gpuverify

    pkg = base / "peer-pkg"
    if not pkg.exists():
        shutil.copytree(
            Path(pytest_gpuverify.__file__).parent,
            pkg / "pytest_gpuverify",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    probe = "import " + ", ".join(PEER_IMPORTS)
    env = {"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin", "HOME": str(base)}

    def works(python: str, path: str) -> bool:
        try:
            return (
                subprocess.run(
                    [python, "-c", probe],
                    env=dict(env, PYTHONPATH=path),
                    user=entry.pw_uid,
                    group=entry.pw_gid,
                    extra_groups=[],
                    capture_output=True,
                ).returncode
                == 0
            )
        except OSError:  # the peer cannot even reach it
            return False

    if works(sys.executable, str(pkg)):
        return sys.executable, str(pkg)
    site = base / "peer-site"
    if not site.exists():
        listing = subprocess.run(
            [
                sys.executable,
                "-c",
                f"{probe}; import sys, json; print(json.dumps(sorted({{getattr(m, '__file__', None) or '' "
                "for m in list(sys.modules.values())})))",
            ],
            capture_output=True,
        ).stdout
        roots = {p for p in sys.path if p.endswith("-packages")}
        tops = set()
        for file in json.loads(listing):
            for root in roots:
                if file.startswith(root + os.sep):
                    tops.add(Path(root) / Path(file).relative_to(root).parts[0])
        site.mkdir()
        for top in tops:
            (
                shutil.copytree(top, site / top.name, ignore=shutil.ignore_patterns("__pycache__"))
                if top.is_dir()
                else shutil.copy2(top, site / top.name)
            )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (f"/usr/bin/{version}", f"/usr/local/bin/{version}", "/usr/bin/python3"):
        if os.access(python, os.X_OK) and works(python, f"{pkg}:{site}"):
            return python, f"{pkg}:{site}"
    pytest.skip(f"no Python {version} the user {entry.pw_name} can run with the plugin's dependencies")


def pytest_collection_modifyitems(items):
    """The tests marked slow first: the run's wall time is its longest worker's, and a minutes-long test
    that starts last would run alone at the end; started first, the others fill the workers around it."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the rest keep their order
