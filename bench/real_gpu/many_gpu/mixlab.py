"""The many-GPU runs, one per device call (tp_mix.sh, fanout.sh, watch_tp.sh call this): a lab repo
(lab/: a TP all-reduce test, one-GPU Triton targets), an env file, the sessions, the sampler
(sampler.py), and the figures (analysis.py) printed at the end and written to OUT/<name>_summary.json.

    python3 mixlab.py tp-mix   OUT [--dry-run-sim] [--gpus N] [--timeout 420]
    python3 mixlab.py fanout   OUT [--dry-run-sim] [--gpus N]
    python3 mixlab.py watch-tp OUT

--dry-run-sim: on the simulated ROCm host (8 GPUs unless --gpus), every target replaced by a CPU
stand-in (lab/tp/test_allreduce_cpu.py, lab/cpu/bench_standin.py): it proves the orchestration
(locks, waits, packing, the sampler, the analysis), not the GPUs, NCCL or Triton.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[2]
sys.path[:0] = [str(TOP), str(HERE), str(TOP / "bench")]

import analysis as an  # noqa: E402
from hostbench import plugin_flag  # noqa: E402

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.simulator import SimState, install  # noqa: E402

# NVLink multicast off in everything started from here, whatever the product does (the lent hosts' rule)
MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
os.environ.update(MULTICAST)
REAL_KERNELS = TOP / "bench" / "real_gpu" / "repo" / "op_tests"


STARTED: list[subprocess.Popen] = []  # the sessions: each in its own process group, killed with this script


def _kill_sessions(signum: int, _frame: object) -> None:
    for p in STARTED:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    raise SystemExit(128 + signum)


class Lab:
    def __init__(self, root: Path, sim: bool, gpus: int) -> None:
        self.root, self.sim, self.gpus = root, sim, gpus
        self.repo, self.locks, self.tickets = root / "repos" / "lab", root / "locks", root / "tickets"
        self.sim_bin = root / "sim-bin" if sim else None
        self.env_file = root / "env.md"

    def build(self, toml: str) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(HERE / "lab", self.repo, ignore=shutil.ignore_patterns("__pycache__"))
        if not self.sim:  # the real kernels: Triton's add test and softmax bench, beside each other
            kernels = self.repo / "kernels"
            kernels.mkdir()
            for src in ("triton_tests/conftest.py", "triton_tests/triton_add.py", "triton_tests/test_triton_add.py"):
                shutil.copy(REAL_KERNELS / src, kernels)
            shutil.copy(REAL_KERNELS / "op_benchmarks" / "triton" / "bench_softmax.py", kernels)
        (self.repo / "gpuverify.toml").write_text(toml)
        git = ["git", "-C", str(self.repo)]
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.repo)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "lab"], check=True)
        self.locks.mkdir()
        self.tickets.mkdir()
        if self.sim_bin is not None:
            install(self.sim_bin, SimState.idle(gpus=self.gpus))
        spec = demo.EnvSpec(
            tickets=self.tickets,
            repos=self.root / "repos",
            locks=self.locks,
            repo_rows=[("lab", self.repo, None, str(self.repo))],
            containers=[],
            gpus=self.gpus,
            arch="gfx942" if self.sim else "sm_90",
        )
        self.env_file.write_text(demo.render_env_file(spec))

    def session(self, ticket: str, workers: int, log: Path, extra_env: dict | None = None) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_flag()]
        cmd += ["--gpu-verify", "--gpu-container", "none", "--gpu-env", str(self.env_file), "--gpu-wait", "480"]
        cmd += ["--ticket", ticket, *(["--gpu-window", "0.5"] if self.sim else [])]
        cmd += [*(["-n", str(workers)] if workers > 1 else []), "gpuverify.toml"]
        env = dict(os.environ, PYTHONPATH=f"{TOP}:{os.environ.get('PYTHONPATH', '')}".rstrip(":"))
        if self.sim_bin is not None:
            env["PATH"] = f"{self.sim_bin}:{env['PATH']}"
        env.update(extra_env or {})
        out = open(log, "w")  # noqa: SIM115 (the session's, closed with it)
        proc = subprocess.Popen(
            cmd, cwd=self.repo, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        STARTED.append(proc)
        return proc

    def sampler(self, out: Path) -> tuple[subprocess.Popen, Path]:
        stop = self.root / "sampler.stop"
        argv = [sys.executable, str(HERE / "sampler.py"), str(out), str(self.locks), str(stop)]
        return subprocess.Popen([*argv, *([] if self.sim else ["--nvml"])]), stop


def targets_toml(sim: bool, tp: int, tp_runs: int, singles: int, hold: float) -> str:
    lines = []
    for i in range(1, tp_runs + 1):
        path = "tp/test_allreduce_cpu.py" if sim else "tp/test_allreduce.py"
        lines += ["[[targets]]", f'name = "tp-allreduce-{i}"', 'kind = "pytest"', f'path = "{path}"']
        lines += [f"gpus = {tp}", f'env = {{ TP_HOLD_S = "{hold}" }}', ""]
    for i in range(1, singles + 1):
        if sim:
            lines += ["[[targets]]", f'name = "standin-{i}"', 'kind = "bench"']
            lines += [f'command = "python3 cpu/bench_standin.py {hold / 2}"', ""]
        elif i % 2:
            lines += [
                "[[targets]]",
                f'name = "triton-add-{i}"',
                'kind = "pytest"',
                'path = "kernels/test_triton_add.py"',
                "",
            ]
        else:
            lines += ["[[targets]]", f'name = "triton-softmax-{i}"', 'kind = "bench"']
            lines += ['command = "python3 kernels/bench_softmax.py"', 'regime = "warm"', ""]
    return "\n".join(lines)


def gpu_count(args: argparse.Namespace) -> int:
    if args.dry_run_sim:
        return args.gpus or 8
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    n = sum(1 for ln in listed.splitlines() if ln.startswith("GPU "))
    return min(n, args.gpus) if args.gpus else n


def wait_all(procs: list[subprocess.Popen], timeout: float) -> tuple[list[int | None], bool]:
    """Exit codes, and whether the timeout ran out (then every session's process group is killed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.2)
    timed_out = any(p.poll() is None for p in procs)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return [p.returncode for p in procs], timed_out


def stop_sampler(proc: subprocess.Popen, stop: Path) -> None:
    stop.touch()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check_tail(folders: list[Path]) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", *map(str, folders)],
        capture_output=True,
        text=True,
        cwd=TOP,
        # the carried wheels' folder stays on the path (pydantic is not installed on the lent machines)
        env=dict(os.environ, PYTHONPATH=f"{TOP}:{os.environ.get('PYTHONPATH', '')}".rstrip(":")),
    )
    return "\n".join((res.stdout + res.stderr).strip().splitlines()[-6:]) + f"\n(check exit {res.returncode})"


def markers(artifacts: dict[str, dict]) -> dict[str, set[int]]:
    return {
        a["env"]["GPUVERIFY_RUN_ID"]: {g["index"] for g in a.get("gpus") or []}
        for a in artifacts.values()
        if (a.get("env") or {}).get("GPUVERIFY_RUN_ID")
    }


def sampler_figures(samples: list[dict], artifacts: dict[str, dict], nvml: bool) -> dict:
    """The sampler's overlaps and unlocked uses among this script's runs (their artifacts' markers);
    marked processes of other sessions on the machine are counted apart, as NVML pids with no marker."""
    ours = markers(artifacts)
    out: dict = {"samples": len(samples)}
    for source in ("env", "nvml") if nvml else ("env",):
        seen = {m for s in samples for ms in (s.get(source) or {}).values() for m in ms}
        mine = [
            {**s, source: {g: [m for m in ms if m in ours] for g, ms in (s.get(source) or {}).items()}} for s in samples
        ]
        out[f"{source}_runs_seen"] = len(seen & set(ours))
        out[f"{source}_other_processes"] = sorted(seen - set(ours))[:10]
        out[f"{source}_overlaps"] = an.sample_overlaps(mine, source)[:20]
        out[f"{source}_unlocked"] = an.unlocked_uses(mine, source)[:20]
        out[f"{source}_outside_lock"] = an.outside_their_lock(mine, source, ours)[:20]
    return out


def tp_mix(args: argparse.Namespace, out: Path) -> dict:
    n = gpu_count(args)
    tp = min(4, n)
    lab = Lab(Path(args.root), args.dry_run_sim, n)
    hold = 3.0 if args.dry_run_sim else 8.0
    lab.build(targets_toml(args.dry_run_sim, tp, 2, 8, hold))
    workers = max(1, n // 2)
    print(
        f"== tp-mix: {n} GPUs, TP={tp}{' (fewer than 4 GPUs: TP=N)' if tp < 4 else ''}, 2 sessions x {workers} workers,"
        f" 2 TP + 8 one-GPU targets each{' -- DRY RUN on the simulated host: CPU stand-ins' if args.dry_run_sim else ''}"
    )
    samp, stop = lab.sampler(out / "tp_mix_samples.jsonl")
    t0 = time.time()
    procs = [lab.session(t, workers, out / f"tp_mix_session_{t}.log") for t in ("MIX-A", "MIX-B")]
    codes, deadlock = wait_all(procs, args.timeout)
    wall = time.time() - t0
    stop_sampler(samp, stop)
    arts = an.load_artifacts(lab.tickets)
    header, samples = an.read_samples(out / "tp_mix_samples.jsonl")
    holds = an.holds_of(arts)
    jobs = [(len(h.gpus), h.end - h.start) for h in holds]
    names = [f"tp-allreduce-{i}" for i in (1, 2)] + [
        (f"standin-{i}" if args.dry_run_sim else f"triton-{'add' if i % 2 else 'softmax'}-{i}") for i in range(1, 9)
    ]
    actual, packed, bound = an.makespan(holds), an.packed_makespan(jobs, n), an.lower_bound(jobs, n)
    figures = {
        "gpus": n,
        "tp": tp,
        "dry_run_sim": args.dry_run_sim,
        "session_exit_codes": codes,
        "deadlock": deadlock,
        "wall_s": round(wall, 1),
        "artifacts": len(arts),
        "verdicts": {k: a.get("verdict") for k, a in arts.items()},
        "lost": an.lost(names * 2, arts),
        "lock_overlaps": an.lock_overlaps(holds),
        "tp_waits_s": [(r, round(w, 2)) for r, w in an.waits(holds)],
        "makespan_s": round(actual, 2),
        "packed_makespan_s": round(packed, 2),
        "lower_bound_s": round(bound, 2),
        "makespan_ratio": round(actual / packed, 3) if packed else None,
        **sampler_figures(samples, arts, bool(header.get("nvml"))),
        "check": check_tail([lab.tickets / "MIX-A", lab.tickets / "MIX-B"]),
    }
    return figures


def fanout(args: argparse.Namespace, out: Path) -> dict:
    n = gpu_count(args)
    lab = Lab(Path(args.root), args.dry_run_sim, n)
    lab.build(targets_toml(args.dry_run_sim, 1, 0, 8, 4.0))
    var = "HIP_VISIBLE_DEVICES" if args.dry_run_sim else "CUDA_VISIBLE_DEVICES"
    print(f"== fanout: 8 one-GPU targets, -n {n} over {n} GPUs vs one worker on GPU 0 ({var}=0)")
    walls, starts = {}, {}
    for label, workers, extra in (("one", 1, {var: "0"}), ("all", n, {})):
        t0 = time.time()
        codes, timed_out = wait_all([lab.session(f"FAN-{label}", workers, out / f"fanout_{label}.log", extra)], 240)
        walls[label] = time.time() - t0
        arts = an.load_artifacts(lab.tickets / f"FAN-{label}")
        first = (
            min((an.epoch((a.get("timeline") or {}).get("command_started")) or 1e18) for a in arts.values())
            if arts
            else t0
        )
        starts[label] = first - t0
        print(
            f"{label}: wall {walls[label]:.1f} s, start cost {starts[label]:.1f} s, exit {codes}, timed out {timed_out}"
        )
    all_arts = an.load_artifacts(lab.tickets)
    ratio, goal = an.fanout_goal(walls["all"], walls["one"], n, starts["all"])
    used = sorted({g["index"] for k, a in all_arts.items() if k.startswith("FAN-all") for g in a.get("gpus") or []})
    return {
        "gpus": n,
        "dry_run_sim": args.dry_run_sim,
        "wall_one_s": round(walls["one"], 1),
        "wall_all_s": round(walls["all"], 1),
        "start_cost_s": round(starts["all"], 1),
        "fanout_ratio": round(ratio, 3),
        "goal": round(goal, 3),
        "met": ratio <= goal,
        "gpus_used_by_all": used,
        "lost": an.lost(
            [f"standin-{i}" if args.dry_run_sim else f"triton-{'add' if i % 2 else 'softmax'}-{i}" for i in range(1, 9)]
            * 2,
            all_arts,
        ),
        "gpu_lock_mismatches": an.gpu_lock_mismatches(all_arts),
        "check": check_tail([lab.tickets / "FAN-one", lab.tickets / "FAN-all"]),
    }


def tp_gpus_running(uuids: dict[str, int]) -> list[int]:
    """The GPUs of a marked process that sees two or more: the TP target's, once its command runs."""
    import sampler

    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            env = sampler.environ_of(int(entry.name)) or {}
            if "GPUVERIFY_RUN_ID" in env and "," in env.get("CUDA_VISIBLE_DEVICES", ""):
                return sampler.visible_gpus(env["CUDA_VISIBLE_DEVICES"], uuids)
    return []


def watch_tp(args: argparse.Namespace, out: Path) -> dict:
    n = gpu_count(args)
    if n < 2:
        return {"gpus": n, "skipped": "a TP run needs 2 or more GPUs"}
    tp = min(4, n - 1) if n > 2 else 2  # a GPU left for a one-GPU target beside it where the host has one
    lab = Lab(Path(args.root), False, n)
    lab.build(targets_toml(False, tp, 1, 2 if n > tp else 0, 40.0))
    import pynvml as nv

    nv.nvmlInit()
    uuids = {}
    for i in range(nv.nvmlDeviceGetCount()):
        u = nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(i))
        uuids[u.decode() if isinstance(u, bytes) else u] = i
    print(
        f"== watch-tp: TP={tp} all-reduce held 40 s beside {'2 one-GPU targets' if n > tp else 'nothing'}; a foreign load on one GPU"
    )
    session = lab.session("WATCH", 3, out / "watch_tp_session.log")
    deadline, gpus = time.monotonic() + 300, []
    while time.monotonic() < deadline and session.poll() is None and not gpus:
        gpus = tp_gpus_running(uuids)
        time.sleep(0.2)
    foreign = None
    if gpus:
        time.sleep(8)  # into the timed loop, past NCCL's start
        uuid = next(u for u, i in uuids.items() if i == gpus[-1])
        env = {k: v for k, v in os.environ.items() if k != "GPUVERIFY_RUN_ID"}
        env["CUDA_VISIBLE_DEVICES"] = uuid  # no lock taken: another user's job
        foreign = subprocess.Popen(
            [sys.executable, str(TOP / "bench/real_gpu/load.py"), "15"],
            env=env,
            stdout=open(out / "watch_tp_foreign.log", "w"),
            stderr=subprocess.STDOUT,
        )
        print(f"foreign load pid {foreign.pid} on GPU {gpus[-1]} ({uuid}), TP target holds {gpus}")
    codes, timed_out = wait_all([session], 420)
    if foreign is not None:
        foreign.wait()
    arts = an.load_artifacts(lab.tickets)
    rows = {}
    for name, a in arts.items():
        held = {g["index"] for g in a.get("gpus") or []}
        machine = [g for g in (a.get("machine") or {}).get("gpus") or [] if g.get("index") in held]
        rows[name] = {
            "target": (a.get("target") or {}).get("name"),
            "verdict": a.get("verdict"),
            "gpus": sorted(held),
            "watch_reasons": [r for r in a.get("reasons") or [] if "process" in r or "watch" in r][:3],
            "uuids": [g.get("uuid") for g in machine],
            "links": [g.get("links") for g in machine],
            "mig_mode": [g.get("mig_mode") for g in machine],
            "multicast_env": {k: (a.get("env") or {}).get(k) for k in MULTICAST},
        }
    inconclusive = sorted(r["target"] for r in rows.values() if r["verdict"] == "INCONCLUSIVE")
    return {
        "gpus": n,
        "tp": tp,
        "foreign_on_gpu": gpus[-1] if gpus else None,
        "session_exit": codes,
        "timed_out": timed_out,
        "inconclusive": inconclusive,
        "expected_inconclusive": ["tp-allreduce-1"],
        "met": inconclusive == ["tp-allreduce-1"],
        "runs": rows,
        "check": check_tail([lab.tickets / "WATCH"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("tp-mix", "fanout", "watch-tp"))
    ap.add_argument("out")
    ap.add_argument(
        "--dry-run-sim", action="store_true", help="the simulated ROCm host and CPU stand-ins: the orchestration only"
    )
    ap.add_argument("--gpus", type=int, default=0, help="use this many GPUs (default: all; 8 in the dry run)")
    ap.add_argument("--timeout", type=float, default=420.0, help="seconds before the sessions count as deadlocked")
    ap.add_argument("--root", default="/tmp/gpuverify-manygpu", help="where the lab, locks and tickets go (emptied)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _kill_sessions)  # `timeout` in the .sh: no session outlives the call
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.what == "watch-tp" and args.dry_run_sim:
        ap.error("watch-tp runs on a real NVIDIA host only (a foreign process on a real GPU)")
    figures = {"tp-mix": tp_mix, "fanout": fanout, "watch-tp": watch_tp}[args.what](args, out)
    name = args.what.replace("-", "_")
    (out / f"{name}_summary.json").write_text(json.dumps(figures, indent=1, default=str))
    tickets = Path(args.root) / "tickets"
    if tickets.exists():
        subprocess.run(["tar", "czf", str(out / f"{name}_tickets.tar.gz"), "-C", str(tickets), "."], check=False)
    print(f"== {args.what} figures")
    for key, value in figures.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
