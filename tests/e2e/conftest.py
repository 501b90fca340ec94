"""Shared fixtures: a real Docker Engine, a simulated ROCm host, a git checkout, an env file."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from session_cmd import PYTEST

from pytest_gpuverify.cli import demo

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"

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


@dataclass
class Sandbox:
    root: Path
    client: object
    sim_bin: Path
    repo: Path
    env_path: Path
    container: str
    spec: demo.EnvSpec
    extra_containers: list
    started: float = 0.0

    @property
    def state_path(self) -> Path:
        return self.sim_bin / "sim-state.json"

    @property
    def tickets(self) -> Path:
        return self.spec.tickets

    def rewrite_env(self, **changes) -> None:
        for key, value in changes.items():
            setattr(self.spec, key, value)
        self.env_path.write_text(demo.render_env_file(self.spec), encoding="utf-8")

    def start_container(self, name: str, sim_bin: Path | None = None, mounts: dict | None = None):
        container = demo.start_container(
            self.client, name, sim_bin or self.sim_bin, mounts or {str(self.repo): "/workspace/aiter"}
        )
        self.extra_containers.append(name)
        return container

    def pytest(
        self,
        *args: str,
        ticket: str | None = "T-1",
        window: str = "0.3",
        timeout: float = 300,
        env: dict | None = None,
        popen: bool = False,
    ):
        """The session's CompletedProcess; ``popen``: its Popen, output (stderr with it) on a pipe."""
        cmd = [*PYTEST, "--gpu-verify", "--gpu-window", window, "--gpu-env", str(self.env_path)]
        if ticket:
            cmd += ["--ticket", ticket]
        full_env = dict(os.environ, PATH=f"{self.sim_bin}:{os.environ['PATH']}")
        full_env.pop("GPUVERIFY_ENV", None)
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
            full_env.pop(name, None)  # the outer worker's identity: the run under test is its own session
        full_env.update(env or {})
        if popen:
            return subprocess.Popen(
                [*cmd, *args], cwd=self.repo, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        self.last = subprocess.run([*cmd, *args], cwd=self.repo, env=full_env, capture_output=True, timeout=timeout)
        return self.last

    def artifact(self, topic: str, ticket: str = "T-1"):
        """The artifact; where there is none, a failure that shows the last session's output."""
        from pytest_gpuverify.records.artifact import read_artifact

        path = self.tickets / ticket / f"bench_{topic}.json"
        if not path.exists():
            last = getattr(self, "last", None)
            said = (last.stdout + last.stderr).decode("utf-8", "replace")[-4000:] if last is not None else "no session"
            raise AssertionError(
                f"no artifact {path}; the last session (exit {getattr(last, 'returncode', None)}) printed:\n{said}"
            )
        return read_artifact(path)

    def exec_ids(self, name: str | None = None) -> list:
        """Commands exec'd in the container since the sandbox was made (from the engine's events)."""
        return demo.exec_commands(self.client, name or self.container, self.started)

    def start_sleeper(self, *args: str) -> subprocess.Popen:
        """pytest running op_tests/test_sleep.py, returned once the command prints (in the container,
        or with ``--gpu-container none`` among ``args`` on the host)."""
        import time

        cmd = [
            *PYTEST,
            "--gpu-verify",
            "--gpu-window",
            "0.3",
            "--gpu-env",
            str(self.env_path),
            "--ticket",
            "T-1",
            "op_tests/test_sleep.py",
            *args,
        ]
        proc = subprocess.Popen(
            cmd,
            cwd=self.repo,
            env=dict(os.environ, PATH=f"{self.sim_bin}:{os.environ['PATH']}"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            logs = list((self.tickets / "T-1").glob("bench_sleep.*.log")) if (self.tickets / "T-1").exists() else []
            if logs and b"sleeping" in logs[0].read_bytes():
                return proc
            time.sleep(0.1)
        proc.kill()
        pytest.fail("the target never started")

    def command_gone(self, marker: str = "test_sleep.py") -> bool:
        """No process of the container runs the command any more."""
        import time

        time.sleep(0.5)
        c = self.client.containers.get(self.container)
        ps = c.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"]).output.decode()
        assert "infinity" in ps, f"could not list the container's processes: {ps!r}"  # PID 1 is sleep infinity
        return marker not in ps

    def lock_files_free(self) -> bool:
        return all(
            subprocess.run(["flock", "-n", str(p), "true"]).returncode == 0 for p in self.spec.locks.glob("*.lock")
        )


@pytest.fixture
def sandbox(tmp_path, docker_client):
    with make_sandbox(tmp_path / "host", docker_client) as box:
        yield box


@contextmanager
def make_sandbox(root: Path, docker_client):
    """A simulated host with a real container; the container is removed on leaving."""
    import time

    from pytest_gpuverify.simulator import SimState, install

    started = time.time()
    sim_bin = root / "sim-bin"
    install(sim_bin, SimState.idle(gpus=4, arch="gfx942"))
    for sub in ("tickets", "locks", "repos"):
        (root / sub).mkdir(parents=True)
    repo = demo.make_repo(root / "repos" / "aiter")
    name = f"gv-test-{uuid.uuid4().hex[:8]}"
    demo.start_container(docker_client, name, sim_bin, {str(repo): "/workspace/aiter"})
    spec = demo.EnvSpec(
        tickets=root / "tickets",
        repos=root / "repos",
        locks=root / "locks",
        repo_rows=[("aiter", repo, name, "/workspace/aiter")],
        containers=[(name, demo.ROOTFS_IMAGE)],
        gpus=4,
    )
    env_path = root / "env.md"
    env_path.write_text(demo.render_env_file(spec), encoding="utf-8")
    box = Sandbox(root, docker_client, sim_bin, repo, env_path, name, spec, [], started)
    try:
        yield box
    finally:
        demo.remove_sandbox_containers(docker_client, [name, *box.extra_containers])


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
