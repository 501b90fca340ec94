"""A GPU host without containers, for the lock benches: fake GPU tools (or, with ``arch`` given, the
host's real GPUs and tools), a git repo whose gpuverify.toml declares ledger-writing targets, an
env file, and pytest sessions run on the host (`--gpu-container none`). Shared by
bench/contention.py and bench/handoff.py."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.simulator import SimState, install  # noqa: E402

# Each target writes "<gpu> start|end <epoch seconds> <id>" lines around its sleep, then one passing check.
COMMAND = (
    'echo "${HIP_VISIBLE_DEVICES:-${CUDA_VISIBLE_DEVICES:-?}} start $(date +%s.%N) $0" >> "$GV_LEDGER"; sleep $1; '
    'echo "${HIP_VISIBLE_DEVICES:-${CUDA_VISIBLE_DEVICES:-?}} end $(date +%s.%N) $0" >> "$GV_LEDGER"; '
    'echo "[checkAllclose atol=0.01 rtol=0.01 passed~]"'
)


def make_host(
    root: Path, gpus: int, targets: int, duration: float, real_arch: str | None = None
) -> tuple[Path, Path, Path | None]:
    """(env file, repo, sim bin dir); with ``real_arch`` (the host's, as the Hosts row says it) the
    host's own GPUs and tools, and no sim bin dir."""
    sim = None if real_arch else root / "sim-bin"
    if sim is not None:
        install(sim, SimState.idle(gpus=gpus))
    repo = root / "repos" / "bench"
    repo.mkdir(parents=True)
    (repo / "README").write_text("ledger targets\n")
    lines = []
    for i in range(targets):
        lines += [
            "[[targets]]",
            f'name = "t{i:03d}"',
            'kind = "bench"',
            f"command = {json.dumps(['sh', '-c', COMMAND, f't{i:03d}', str(duration)])}",
            "",
        ]
    (repo / "gpuverify.toml").write_text("\n".join(lines))
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "bench"], check=True
    )
    (root / "locks").mkdir()
    (root / "tickets").mkdir()
    spec = demo.EnvSpec(
        tickets=root / "tickets",
        repos=root / "repos",
        locks=root / "locks",
        repo_rows=[("bench", repo, None, str(repo))],
        containers=[],
        gpus=gpus,
        arch=real_arch or "gfx942",
    )
    env = root / "env.md"
    env.write_text(demo.render_env_file(spec))
    return env, repo, sim


def plugin_flag() -> list[str]:
    """``-p pytest_gpuverify.plugin`` where the package is on PYTHONPATH but not installed (the lent
    GPU machine): pytest then finds no entry point for it."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "pytest_gpuverify.plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_gpuverify.plugin"]


def start_session(
    env: Path,
    repo: Path,
    sim: Path | None,
    ledger: Path,
    ticket: str,
    window: float,
    wait: float = 900,
    extra_env: dict | None = None,
):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *plugin_flag(),
        "--gpu-verify",
        "--gpu-container",
        "none",
        "--gpu-env",
        str(env),
        "--gpu-window",
        str(window),
        "--gpu-wait",
        str(wait),
        "--ticket",
        ticket,
        "gpuverify.toml",
    ]
    return subprocess.Popen(
        cmd,
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(
            os.environ,
            PATH=f"{sim}:{os.environ['PATH']}" if sim else os.environ["PATH"],
            GV_LEDGER=str(ledger),
            **(extra_env or {}),
        ),
    )


def read_ledger(ledger: Path) -> dict[tuple[str, str], dict]:
    """(session ticket id, target id) is not in the ledger: ids are per target and session-unique
    through the order of lines; returns runs as a list of {gpu, start, end, id}."""
    runs: dict[str, list] = {}
    for line in ledger.read_text().splitlines():
        gpu, what, t, ident = line.split()
        runs.setdefault(ident, []).append((what, float(t), gpu))
    return runs


def intervals(ledger: Path) -> list[tuple[str, float, float, str]]:
    """(gpu, start, end, id) for every run, pairing each id's starts and ends in order."""
    out = []
    for ident, events in read_ledger(ledger).items():
        starts = sorted((t, g) for w, t, g in events if w == "start")
        ends = sorted(t for w, t, g in events if w == "end")
        for (s, g), e in zip(starts, ends):
            out.append((g, s, e, ident))
    return out


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


median = statistics.median
