"""What `pytest --gpu-verify` costs over bare `docker exec`s of the same commands, in one run.

Sets up the simulated ROCm host (real container, fake GPU tools), then times, interleaved and
repeated: N bare `docker exec` runs of a trivial op_test, and `pytest --gpu-verify` over the same N
targets, for N = 1 and N = 10. Prints the fixed cost per session and the cost per extra target.
Goals: a second session's fixed cost at most 0.5 s beyond a bare exec and pytest's own start with
the same plugins (`pytest -q --co` in an empty folder, timed interleaved too); each extra target at
most 0.03 s beyond its bare exec. (The first goal, fixed cost <= window + 1.5 s, is printed as before.)

First, from the artifacts' timelines: the first session of the user on this host waits its window
(and starts the background sampler); the second does not: its pick (asked for a GPU -> lock taken)
and the time from the end of collection to its lock. Every session timed after them is a second one.

The simulated host is the demo's: its tools on PATH and ROCM_PATH at them, so the GPUs are read
through the simulated amdsmi library in-process, as on a ROCm install (--tools: through the amd-smi
and rocm-smi tools only, as on a host without the library). Each checkout timed is byte-compiled
first, as pip does when it installs the plugin (this machine sets PYTHONDONTWRITEBYTECODE: without
it every session would compile the plugin's modules anew).

    python bench/overhead.py [--window 2] [--repeats 3] [--tools] [--other DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.common.clock import parse_iso_utc  # noqa: E402
from pytest_gpuverify.execute.container import docker_client  # noqa: E402

TRIVIAL = "op_tests/test_rmsnorm2d.py"


def timed(cmd, **kw) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, **kw)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0,):
        raise SystemExit(
            f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout.decode()[-3000:]}{proc.stderr.decode()[-3000:]}"
        )
    return elapsed


def _what(command: str) -> str:
    for word, what in (
        ("rocminfo", "arch"),
        ("json.dumps(out)", "versions"),
        ("GPUVERIFY-ORIGIN", "import check"),
        ("reused", "cache probe"),
    ):
        if word in command:
            return what
    return command[:40]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--other", help="another checkout's folder holding pytest_gpuverify/: its plugin runs interleaved")
    ap.add_argument("--tools", action="store_true", help="read the GPUs with the tools, not the amdsmi library")
    args = ap.parse_args()
    for tree in filter(None, [str(Path(__file__).resolve().parents[1]), args.other]):
        compileall.compile_dir(str(Path(tree) / "pytest_gpuverify"), quiet=1)
    root = Path(tempfile.mkdtemp(prefix="gv-bench-"))
    client = docker_client()
    name = "gpuverify-bench"
    env_path, repo, sim_bin = demo.setup_sandbox(root, client, container=name)
    try:
        targets = []
        for i in range(10):
            rel = f"op_tests/test_trivial_{i}.py"
            shutil.copy(repo / TRIVIAL, repo / rel)
            targets.append(rel)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "bench"], check=True
        )
        env = demo.sandbox_environ(sim_bin)
        if args.tools:
            env.pop("ROCM_PATH")
        print(f"GPU readings: {'the tools' if args.tools else 'the amdsmi library, in-process'}")

        def bare(n: int) -> float:
            t = 0.0
            for rel in targets[:n]:
                t += timed(
                    [
                        "docker",
                        "exec",
                        "-w",
                        "/workspace/aiter",
                        "-e",
                        "PYTHONPATH=/workspace/aiter",
                        "-e",
                        "HIP_VISIBLE_DEVICES=0",
                        name,
                        "python3",
                        rel,
                    ]
                )
            return t

        # Only this plugin is loaded: other plugins installed here (hypothesis imports itself at
        # session end: about 1 s) would be counted as ours otherwise.
        plugin_env = dict(env, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")

        this_tree = str(Path(__file__).resolve().parents[1])

        def code_env(tree: str) -> dict:
            return dict(plugin_env, PYTHONPATH=os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")])))

        def plugin(n: int, tree: str = this_tree) -> float:
            return timed(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "pytest_gpuverify.plugin",
                    "-p",
                    "no:cacheprovider",
                    "--gpu-verify",
                    "--gpu-env",
                    str(env_path),
                    "--gpu-window",
                    str(args.window),
                    "--ticket",
                    "BENCH",
                    *targets[:n],
                ],
                cwd=repo,
                env=code_env(tree),
            )

        def plugin_as(ticket: str) -> dict:
            timed(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "pytest_gpuverify.plugin",
                    "-p",
                    "no:cacheprovider",
                    "--gpu-verify",
                    "--gpu-env",
                    str(env_path),
                    "--gpu-window",
                    str(args.window),
                    "--ticket",
                    ticket,
                    targets[0],
                ],
                cwd=repo,
                env=code_env(this_tree),
            )
            art = json.loads((root / "tickets" / ticket / "bench_trivial_0.json").read_text())
            return {k: parse_iso_utc(v) for k, v in art["timeline"].items() if v} | {"notes": art["notes"]}

        for n, ticket in enumerate(("FIRST", "SECOND"), 1):
            tl = plugin_as(ticket)
            # the pick starts before the container checks and runs alongside them (pickahead.py): what
            # precedes it is the session's start and the repo's state; the checks that outlast the
            # pick show in lock -> command start
            print(
                f"session {n} of this user: pick {1000 * (tl['lock_taken'] - tl['pick_started']):6.1f} ms, "
                f"collection -> lock {1000 * (tl['lock_taken'] - tl['collected']):6.1f} ms "
                f"(before its pick: {1000 * (tl['pick_started'] - tl['collected']):.1f} ms; lock -> command start "
                f"{1000 * (tl['command_started'] - tl['lock_taken']):.1f} ms: the container checks after the lock)"
                f"{'; ' + tl['notes'][0] if tl['notes'] else ''}"
            )
        samples: dict[str, list[float]] = {"bare1": [], "bare10": [], "plug1": [], "plug10": [], "start": []}
        others: dict[str, list[float]] = {"plug1": [], "plug10": [], "start": []}  # --other's, interleaved with ours
        empty = root / "empty"
        empty.mkdir()

        def start(tree: str = this_tree) -> float:
            """pytest's own start with the same plugins: collection of an empty folder."""
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "--co",
                    "-p",
                    "pytest_gpuverify.plugin",
                    "-p",
                    "no:cacheprovider",
                ],
                cwd=empty,
                env=code_env(tree),
                capture_output=True,
            )
            return time.perf_counter() - t

        plugin(1)  # warm the page cache and the image
        if args.other:
            plugin(1, args.other)
        for _ in range(args.repeats):
            samples["bare1"].append(bare(1))
            samples["plug1"].append(plugin(1))
            if args.other:
                others["plug1"].append(plugin(1, args.other))
            samples["bare10"].append(bare(10))
            samples["plug10"].append(plugin(10))
            if args.other:
                others["plug10"].append(plugin(10, args.other))
            samples["start"].append(start())
            if args.other:
                others["start"].append(start(args.other))
        med = {k: statistics.median(v) for k, v in samples.items()}
        if args.other:
            omed = {k: statistics.median(v) for k, v in others.items()}
            o_fixed = omed["plug1"] - med["bare1"]
            o_extra = (omed["plug10"] - omed["plug1"]) / 9 - (med["bare10"] - med["bare1"]) / 9
            print(
                f"other tree {args.other}: plug1 {omed['plug1']:.3f} s (all: {', '.join(f'{x:.3f}' for x in others['plug1'])}), "
                f"plug10 {omed['plug10']:.3f} s (all: {', '.join(f'{x:.3f}' for x in others['plug10'])}); "
                f"fixed {o_fixed:.3f} s, per extra target {o_extra:.3f} s"
            )
            print(
                f"this tree / other, medians: plug1 {med['plug1'] / omed['plug1']:.3f}, "
                f"plug10 {med['plug10'] / omed['plug10']:.3f}"
            )
            o_own = omed["plug1"] - med["bare1"] - omed["start"]
            print(
                f"other tree: second session's fixed cost beyond a bare exec and pytest's start {o_own:6.3f} s "
                f"(ratio to the 0.5 s goal {o_own / 0.5:.2f}); per extra target {o_extra:6.3f} s "
                f"(ratio to the 0.03 s goal {o_extra / 0.03:.2f})"
            )
        fixed = med["plug1"] - med["bare1"]
        per_extra = (med["plug10"] - med["plug1"]) / 9 - (med["bare10"] - med["bare1"]) / 9
        print(f"window {args.window:g} s, {args.repeats} repeats, medians (pytest with only this plugin loaded):")
        for k, v in med.items():
            print(f"  {k:<7} {v:7.3f} s   (all: {', '.join(f'{x:.3f}' for x in samples[k])})")
        print(
            f"fixed cost per session : {fixed:6.3f} s   target <= {args.window + 1.5:.1f} s  "
            f"-> {'OK' if fixed <= args.window + 1.5 else 'OVER'}  (ratio to window+1.5: {fixed / (args.window + 1.5):.2f})"
        )
        print(
            f"cost per extra target  : {per_extra:6.3f} s   target <= 0.03 s  -> {'OK' if per_extra <= 0.03 else 'OVER'}"
            f"  (ratio to one bare exec: {per_extra / (med['bare1']):.2f})"
        )
        own = med["plug1"] - med["bare1"] - med["start"]
        print(
            f"this tree: second session's fixed cost beyond a bare exec and pytest's start {own:6.3f} s "
            f"(ratio to the 0.5 s goal {own / 0.5:.2f}; pytest's start {med['start']:.3f} s); per extra target "
            f"{per_extra:6.3f} s (ratio to the 0.03 s goal {per_extra / 0.03:.2f})"
        )
        # Provenance: execs per session (arch, versions and import check once per container, not per
        # target) and the doctor's cost, each as a ratio to one bare `docker exec`.
        since = time.time()
        plugin(10)
        execs = demo.exec_commands(client, name, since)
        per_session = [e for e in execs if "op_tests/test_trivial_" not in e]
        print(
            f"execs in a 10-target session: {len(execs)} = 10 targets + {len(per_session)} once per session "
            f"({'; '.join(_what(e) for e in per_session)})"
        )
        doctor = statistics.median(
            timed([sys.executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(env_path)], env=env)
            for _ in range(args.repeats)
        )
        print(f"gpuverify doctor        : {doctor:6.3f} s = {doctor / med['bare1']:.1f} bare docker execs")
        return 0
    finally:
        demo.remove_sandbox_containers(client, [name])
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
