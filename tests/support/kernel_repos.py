"""The demo kernel repos as the end-to-end tests change them: commits, declarations, the lab bench's
settings, and a pytest session run in one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from session_cmd import PYTEST

EXAMPLES = Path(__file__).resolve().parents[2] / "conftest_examples"


def out(proc) -> str:
    return proc.stdout.decode(errors="replace")[-4000:] + proc.stderr.decode(errors="replace")[-2000:]


def commit(repo, message="change"):
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], check=True
    )


def declare(repo, example):
    shutil.copy(EXAMPLES / example / "gpuverify.toml", repo / "gpuverify.toml")
    commit(repo, f"declare {example}")


def verify_argv(sandbox, *args: str, ticket: str = "T-1") -> list[str]:
    """A ``--gpu-verify`` session against the sandbox's env file, with a short idle window."""
    return [
        *PYTEST,
        "--gpu-verify",
        "--gpu-window",
        "0.3",
        "--gpu-env",
        str(sandbox.env_path),
        "--ticket",
        ticket,
        *args,
    ]


def sim_env(sandbox) -> dict[str, str]:
    """This environment with the simulated GPU tools first on PATH."""
    return dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}")


def run_in(sandbox, repo, *args, ticket="T-1"):
    return subprocess.run(
        verify_argv(sandbox, *args, ticket=ticket), cwd=repo, capture_output=True, timeout=300, env=sim_env(sandbox)
    )


LAB_DECLARATION = """
[[targets]]
name = "lab"
kind = "bench"
command = "python3 bench/bench_lab.py"
topic = "lab"
repeats = {repeats}
min_steps = {min_steps}
"""


def lab_config(repo, speed=1.0, spread=0.01, steps=50, fail_on_run=0, min_steps=50, message="lab", repeats=3):
    (repo / "bench" / "lab_config.py").write_text(
        f"SPEED = {speed!r}\nSPREAD = {spread!r}\nSTEPS = {steps}\nFAIL_ON_RUN = {fail_on_run}\n"
    )
    (repo / "gpuverify.toml").write_text(LAB_DECLARATION.format(min_steps=min_steps, repeats=repeats))
    commit(repo, message)


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


FIXTURE_TEST = """
import pytest


@pytest.mark.gpu(gpus=2)
def test_gemm_on_two_gpus(locked_gpu, kernel_container):
    assert len(locked_gpu.indices) == 2
    art = kernel_container.run(["python3", "op_tests/test_gemm_a8w8.py"], topic="fixture_gemm")
    assert art.verdict == "PASS", art.reasons
    assert art.env["HIP_VISIBLE_DEVICES"] == ",".join(map(str, locked_gpu.indices))
    assert [g.index for g in art.gpus] == locked_gpu.indices
    assert art.correctness.shapes_checked == 3
"""
