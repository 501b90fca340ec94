"""Fresh containers (a Containers row named `run`) in the sandbox: the row, our containers and another
run's look-alikes, and a session caught while its command sleeps in one."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from kernel_repos import sim_env, verify_argv

from pytest_gpuverify.cli import demo
from pytest_gpuverify.place.ephemeral import OWNER_LABEL, PID_LABEL, RUN_LABEL


def use_run_row(sandbox) -> None:
    """The Repos row names `run`; the Containers row `run` gives the image, the host's dirs and the
    simulator (a real ROCm image has its own), and the PATH that finds the simulated rocminfo."""
    sandbox.spec.repo_rows = [("aiter", sandbox.repo, "run", "/workspace/aiter")]
    sandbox.spec.containers = []
    text = demo.render_env_file(sandbox.spec)
    mounts = ", ".join(
        [f"{d}:{d}:ro" for d in demo.HOST_DIRS if os.path.exists(d)] + [f"{sandbox.sim_bin}:{sandbox.sim_bin}:ro"]
    )
    table = (
        "| name | image | host | mounts | env |\n|---|---|---|---|---|\n"
        f"| run | {demo.ROOTFS_IMAGE} | not set | {mounts} | PATH={sandbox.sim_bin}:{demo.BASE_PATH} HOME=/root |\n"
    )
    text = text.replace("| name | image | host |\n|---|---|---|\n", table)
    sandbox.env_path.write_text(text, encoding="utf-8")


def ours(client) -> list:
    return client.containers.list(all=True, filters={"label": OWNER_LABEL})


def mine(sandbox) -> set:
    """Ids of the fresh-style containers of this test's sandbox (its runs mount its repo; its foreign
    ones are its own): tests in other xdist workers start theirs beside it."""
    return {
        c.id
        for c in ours(sandbox.client)
        if c.name in sandbox.extra_containers
        or any(m.get("Source", "").startswith(str(sandbox.repo)) for m in c.attrs.get("Mounts") or [])
    }


def foreign(sandbox, name: str, run_id: str):
    """A container that looks like one of ours (name prefix, owner label) but is another run's."""
    container = sandbox.client.containers.run(
        demo.ROOTFS_IMAGE,
        ["/bin/sleep", "infinity"],
        name=name,
        detach=True,
        volumes={d: {"bind": d, "mode": "ro"} for d in demo.HOST_DIRS if os.path.exists(d)},
        labels={demo.SANDBOX_LABEL: "1", OWNER_LABEL: "1", RUN_LABEL: run_id},
    )
    sandbox.extra_containers.append(name)
    return container


def sleeping_in_fresh_container(sandbox):
    """pytest running op_tests/test_sleep.py through the `run` row, once it prints; and its container."""
    proc = subprocess.Popen(
        verify_argv(sandbox, "op_tests/test_sleep.py"),
        cwd=sandbox.repo,
        env=sim_env(sandbox),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline, running = time.time() + 90, []
    while time.time() < deadline and not running:
        logs = list((sandbox.tickets / "T-1").glob("bench_sleep.*.log")) if (sandbox.tickets / "T-1").exists() else []
        if logs and b"sleeping" in logs[0].read_bytes():
            # by the session's pid label: another session's fresh container may run beside it
            running = [
                c
                for c in ours(sandbox.client)
                if c.name.startswith("gpuverify-run-") and c.labels.get(PID_LABEL) == str(proc.pid)
            ]
        time.sleep(0.1)
    if len(running) != 1:
        proc.kill()
        pytest.fail(f"expected one fresh container while the command runs, found {running}")
    return proc, running[0]
