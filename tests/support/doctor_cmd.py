"""`gpuverify doctor` run against a sandbox, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys


def doctor(sandbox, **env: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(sandbox.env_path)],
        capture_output=True,
        env=dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}", **env),
    )
    return proc.returncode, proc.stdout.decode() + proc.stderr.decode()


def last(text: str) -> str:
    return text.strip().splitlines()[-1]
