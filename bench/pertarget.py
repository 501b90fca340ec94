"""The plugin's cost per target where no container is involved: the time between one command's end
and the next command's start within one session (`--gpu-container none`, 10 declared targets of the
simulated host, readings through its amdsmi library, or with ``--tools`` through its amd-smi and rocm-smi
tools only, as on a host without the library; each command writes a ledger line when it
starts and ends). Everything the plugin does per target sits there: the previous target's parse,
verdict and release, the next one's pick, re-check, set-up, guard and process start. Given another
checkout of the package (``--other PATH``, e.g. an older commit's ``git archive``), the same for
it, interleaved. Only this plugin is loaded.

    python bench/pertarget.py [--repeats 3] [--tools] [--other PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostbench import intervals, make_host  # noqa: E402

HERE = str(Path(__file__).resolve().parents[1])


def gaps(code: str, root: Path, env: Path, repo: Path, sim: Path, tag: str, tools: bool = False) -> list[float]:
    ledger = root / "ledger.txt"
    ledger.write_text("")
    run_env = dict(
        os.environ,
        PATH=f"{sim}:{os.environ['PATH']}",
        ROCM_PATH=str(sim),
        GV_LEDGER=str(ledger),
        PYTHONPATH=code,
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    if tools:  # no ROCm install to load the amdsmi library from: the tools on PATH read the GPUs
        run_env.pop("ROCM_PATH")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_gpuverify.plugin",
            "--gpu-verify",
            "--gpu-container",
            "none",
            "--gpu-env",
            str(env),
            "--ticket",
            tag,
            "gpuverify.toml",
        ],
        cwd=repo,
        env=run_env,
        capture_output=True,
        check=True,
    )
    runs = sorted((s, e) for _, s, e, _ in intervals(ledger))
    return [b[0] - a[1] for a, b in zip(runs, runs[1:])]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--other", help="another checkout's folder holding pytest_gpuverify/")
    ap.add_argument("--tools", action="store_true", help="read the GPUs with the tools, not the amdsmi library")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gv-pertarget-"))
    env, repo, sim = make_host(root, 1, 10, 0.0)
    trees = {"this tree": HERE, **({"other": args.other} if args.other else {})}
    got: dict[str, list[float]] = {k: [] for k in trees}
    for rep in range(args.repeats):
        for name, code in trees.items():
            got[name] += gaps(code, root, env, repo, sim, f"P{rep}{len(got[name])}", args.tools)
    print(f"GPU readings: {'the tools' if args.tools else 'the amdsmi library, in-process'}")
    for name, values in got.items():
        print(
            f"{name:<10}: between two commands of a session, median {statistics.median(values) * 1000:6.1f} ms "
            f"({len(values)} gaps; p90 {sorted(values)[int(0.9 * (len(values) - 1))] * 1000:.1f} ms)  target <= 30 ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
