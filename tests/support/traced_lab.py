"""The demo's traced lab harness (bench/bench_traced.py) run under the simulated rocprofv3: a copy of
the demo aiter checkout with its own traced_config.py, the tracer's rocpd database and the printed log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_gpuverify.cli import demo
from pytest_gpuverify.simulator import SimState, install

TRACED_CONFIG = "STEPS = {steps}\nTIMER_DIVISOR = {divisor!r}\nKERNEL_VARIANT = {variant!r}\n"


def lab_checkout(root: Path, divisor: float = 1.0, variant: str = "v1", steps: int = 50) -> Path:
    repo = root / "aiter"
    shutil.copytree(demo.DEMO_REPOS / "aiter", repo)
    write_config(repo, divisor, variant, steps)
    return repo


def write_config(repo: Path, divisor: float = 1.0, variant: str = "v1", steps: int = 50) -> None:
    (repo / "bench" / "traced_config.py").write_text(
        TRACED_CONFIG.format(steps=steps, divisor=divisor, variant=variant)
    )


def traced(
    root: Path, divisor: float = 1.0, variant: str = "v1", faults: dict | None = None
) -> tuple[Path, Path, Path]:
    """(the rocpd database, the printed log, the Triton cache) of one traced run of the lab harness."""
    sim = root / "sim-bin"
    state = SimState.idle(gpus=1, arch="gfx942")
    if faults:
        state = state.model_copy(update={"faults": faults})
    install(sim, state)
    repo = lab_checkout(root, divisor, variant)
    cache = root / "triton"
    env = dict(os.environ, PYTHONPATH=str(repo), TRITON_CACHE_DIR=str(cache))
    argv = [str(sim / "rocprofv3"), "--kernel-trace", "--output-format", "rocpd", "-d", str(root / "out"), "-o", "t"]
    proc = subprocess.run(
        [*argv, "--", sys.executable, str(repo / "bench" / "bench_traced.py")],
        env=env,
        capture_output=True,
        timeout=60,
    )
    log = root / "printed.log"
    log.write_bytes(proc.stdout + proc.stderr)
    return root / "out" / "t_results.db", log, cache
