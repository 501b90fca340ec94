"""The background sampler's CPU on the simulated host, in one run: the daemon that outlives a user's
sessions (``lease/readings_daemon.py``), started as a session starts it (interval 0.4 s), measured over
``--seconds`` from ``/proc/<pid>/stat``: its own utime+stime and its children's (cutime+cstime: the
tool processes it ran and waited for), as % of one core.

(a) tools: neither the amdsmi library (no ROCM_PATH) nor sysfs readings (GPUVERIFY_SYSFS_ROOT at an
    empty folder): the sampler runs ``amd-smi`` for each reading, at most every 2 s;
(b) sysfs: GPUVERIFY_SYSFS_ROOT at the simulated host's driver files, every 0.4 s.

Goals: (a) <= 5% of one core, (b) <= 1%.

    python bench/sampler_cpu.py [--seconds 60] [--save bench/results/sampler_cpu.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_gpuverify.simulator import SimState, install  # noqa: E402
from pytest_gpuverify.simulator.sysfs import sysfs_root  # noqa: E402

INTERVAL_S = 0.4  # what a session with a 2 s window asks for (sampler.sampling_interval)
GOALS = {"tools": 5.0, "sysfs": 1.0}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime + cutime + cstime of ``pid``, in seconds."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK  # fields 14-17 of stat(5)


def measure(work: Path, name: str, env: dict[str, str], seconds: float) -> tuple[float, int, str]:
    """(% of one core, samples written, the reading source's first error or "") of one daemon."""
    folder = work / name
    (folder / "locks").mkdir(parents=True)
    shared = folder / "readings.json"
    template = str(folder / "locks" / "gpu-<id>.lock")
    cmd = [sys.executable, "-m", "pytest_gpuverify.lease.readings_daemon", str(shared), "gfx942", template]
    cmd += [f"{INTERVAL_S:g}", "30", "3600"]
    history = shared.with_name(shared.name + ".history.json")
    subprocess.run(cmd, env=env, cwd="/", check=True)  # it forks the daemon and exits
    deadline = time.monotonic() + 30
    while not history.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: the daemon wrote no history in 30 s")
        time.sleep(0.05)
    pid = json.loads(history.read_text())["pid"]
    time.sleep(3.0)  # past its imports and its first readings: the steady state is what a user pays
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_seconds(pid)
    data = json.loads(history.read_text())
    os.kill(pid, signal.SIGTERM)
    errors = [s["error"] for s in data["samples"] if "error" in s]
    return 100.0 * (c1 - c0) / (t1 - t0), len(data["samples"]), (errors[0] if errors else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--save", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuverify-sampler-cpu.") as tmp:
        work = Path(tmp)
        state_path = install(work / "sim", SimState.idle(gpus=8).set_busy(3))
        base = {k: v for k, v in os.environ.items() if k not in ("ROCM_PATH", "GPUVERIFY_SYSFS_ROOT")}
        base.update(PATH=f"{work / 'sim'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
        (work / "empty").mkdir()
        envs = {
            "tools": dict(base, GPUVERIFY_SYSFS_ROOT=str(work / "empty")),
            "sysfs": dict(base, GPUVERIFY_SYSFS_ROOT=str(sysfs_root(state_path))),
        }
        lines = [
            f"background sampler CPU over {args.seconds:g} s, simulated host of 8 GPUs, session interval "
            f"{INTERVAL_S:g} s, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the start"
        ]
        ok = True
        for name, env in envs.items():
            pct, samples, error = measure(work, name, env, args.seconds)
            met = pct <= GOALS[name]
            ok &= met and not error
            lines.append(
                f"  ({'a' if name == 'tools' else 'b'}) {name:5}  {pct:5.2f}% of one core  "
                f"(goal <= {GOALS[name]:g}%: {'met' if met else 'MISSED'}), {samples} readings in its history"
                + (f"; error: {error}" if error else "")
            )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
