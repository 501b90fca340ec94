"""The Slurm launcher against one Slurm job: the wall of 8 targets run as 8 jobs over a node's 4 GPUs
(``pytest --gpu-verify --gpu-slurm``), and as 4 jobs of 2 (``--gpu-slurm-shards 4``), against the wall
of the same 8 in one job on one GPU (``srun --gres=gpu:1 pytest --gpu-verify``), alternating, in one
run. Printed: each run's wall, the ratios of the walls (target: <= 0.6), and from the artifacts the
jobs' GPUs and the largest number of commands that ran at once on one GPU (must be 1).

A real Slurm (munged, slurmctld, slurmd: tests/slurm_cluster.py) with one node of 4 gres GPUs over the
simulated ROCm host's 4, a real container, and 8 targets that each hold their GPU for ``--hold``
seconds, as a kernel test's run would. Needs root, Docker and Debian's slurm-wlm and munge.

    python bench/slurm_fanout.py [--repeats 1] [--hold 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e"), str(ROOT / "tests" / "support")]

import docker  # noqa: E402
import slurm_cluster  # noqa: E402
from conftest import make_sandbox  # noqa: E402
from session_cmd import PYTEST  # noqa: E402

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.common.clock import parse_iso_utc  # noqa: E402
from pytest_gpuverify.records.artifact import read_artifact  # noqa: E402


def most_at_once_on_one_gpu(folder: Path) -> tuple[int, list[int]]:
    """(the most commands that ran at once on one GPU, the GPUs used) from the artifacts' timelines."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for path in folder.glob("bench_slow_*.json"):
        art = read_artifact(path)
        t = art.timeline
        if t is None or not t.command_started or not t.command_ended:
            continue
        for gpu in art.gpus:
            spans.setdefault(gpu.index or 0, []).append(
                (parse_iso_utc(t.command_started), parse_iso_utc(t.command_ended))
            )
    most = 0
    for intervals in spans.values():
        for start, _ in intervals:
            most = max(most, sum(1 for a, b in intervals if a <= start < b))
    return most, sorted(spans)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--hold",
        type=float,
        default=20.0,
        help="seconds each target holds its GPU (an aiter op_test runs tens of seconds)",
    )
    args = parser.parse_args()
    why = slurm_cluster.missing()
    if why:
        print(f"bench/slurm_fanout.py: {why}")
        return 2
    client = docker.from_env(timeout=120)
    demo.ensure_rootfs_image(client)
    root = Path(tempfile.mkdtemp(prefix="gpuverify-slurm-bench-", dir="/tmp"))
    root.chmod(0o755)  # the munge user reaches its folder through it
    cluster = slurm_cluster.SlurmCluster(root / "cluster")
    try:
        cluster.start()
        with make_sandbox(root / "host", client) as box:
            slurm_cluster.add_targets(box.repo, seconds=args.hold)
            box.env_path.write_text(
                box.env_path.read_text() + "\n## Slurm\n\n| setting | value |\n|---|---|\n"
                f"| partition | {slurm_cluster.PARTITION} |\n"
            )
            env = dict(cluster.env(), PATH=f"{box.sim_bin}:{os.environ['PATH']}")
            base = [
                *PYTEST,
                "--gpu-verify",
                "--gpu-window",
                "0.3",
                "--gpu-env",
                str(box.env_path),
                *slurm_cluster.SLOW_TARGETS,
            ]
            runs = {
                "one job": lambda t: ["srun", "--gres=gpu:1", *base, "--ticket", t],
                "8 jobs (--gpu-slurm)": lambda t: [*base, "--ticket", t, "--gpu-slurm"],
                "4 shard jobs": lambda t: [*base, "--ticket", t, "--gpu-slurm", "--gpu-slurm-shards", "4"],
            }
            walls: dict[str, list[float]] = {name: [] for name in runs}
            subprocess.run(
                [
                    "srun",
                    "--gres=gpu:1",
                    *PYTEST,
                    "--gpu-verify",
                    "--gpu-window",
                    "0.3",
                    "--gpu-env",
                    str(box.env_path),
                    "--ticket",
                    "WARM",
                    "op_tests/test_rmsnorm2d.py",
                ],
                cwd=box.repo,
                env=env,
                capture_output=True,
            )  # untimed: python caches, the readings daemon
            for r in range(args.repeats):
                for name, argv in runs.items():
                    ticket = f"B{r}-{list(runs).index(name)}"
                    started = time.monotonic()
                    proc = subprocess.run(argv(ticket), cwd=box.repo, env=env, capture_output=True, text=True)
                    wall = time.monotonic() - started
                    folder = box.tickets / ticket
                    verdicts = sorted(read_artifact(p).verdict for p in folder.glob("bench_slow_*.json"))
                    most, gpus = most_at_once_on_one_gpu(folder)
                    walls[name].append(wall)
                    print(
                        f"{name:<22} wall {wall:6.1f} s  exit {proc.returncode}  verdicts "
                        f"{verdicts.count('PASS')}/8 PASS  GPUs {gpus}  most commands at once on one GPU: {most}"
                    )
                    if proc.returncode != 0:
                        print(proc.stdout[-2000:])
            one = min(walls["one job"])
            for name in list(runs)[1:]:
                print(f"ratio {name} / one job: {min(walls[name]) / one:.2f} (best of {args.repeats}; target <= 0.6)")
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
