"""A simulated ROCm host with a real container: the sandbox most end-to-end tests run a session in."""

from __future__ import annotations

import os
import subprocess
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from session_cmd import PYTEST

from pytest_gpuverify.cli import demo


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
