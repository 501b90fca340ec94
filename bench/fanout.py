"""Fan-out over GPU hosts reached by SSH: targets per second on one host against two, in one run.

Two "hosts" (real sshd on loopback, each its own hostname, simulated ROCm state with 2 GPUs, lock
folder and container: tests/e2e/sshd_hosts.py) and 8 targets that each hold their GPU for a few
seconds (the aiter gemm op_test plus a sleep, as a kernel test's run would). The same 8 targets run
with ``--gpu-host hostA`` (2 workers) and with ``--gpu-hosts all`` (4 workers), alternating;
printed: wall time, targets per second, and the ratio of the two walls (target: <= 0.6); per run,
from the artifacts' timelines, the start-up (pytest start to the first command), the span from the
first command's start to the last one's end, and the (host, GPU) pairs the commands ran on. An
untimed session on both hosts runs first, as hosts in use have run one: the python caches compiled,
the readings daemons started.

The hosts' python has in its site the plugin and what it requires, nothing else, as a GPU host
would (``sshd_hosts.host_python``); ``--host-python this`` gives them this machine's python, with
the test suite's own pytest plugins (hypothesis: 0.45 s of CPU per pytest start, paid by every
worker on the 2 cores both "hosts" share).

Both "hosts" share this machine's cores: the 4 workers of the two-host run start (python, pytest,
the plugin: about 1 s of CPU each) on the same 2 cores as the 2 workers of the one-host run, which
real hosts, each with its own CPUs, would not. ``--cpu-per-host`` gives each host a core of its own
(its sshd pinned, and so its workers, samplers and tools; the controller, and the commands in the
containers, which Docker starts, run on any core): one host has one core in both runs, as adding a
machine adds its CPUs. The default is the shared cores.

    python bench/fanout.py [--repeats 2] [--hold 4] [--host-python gpu-host|this] [--cpu-per-host]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e"), str(ROOT / "tests" / "support")]

from sshd_hosts import host_python, ssh_hosts, sshd_unavailable  # noqa: E402

from pytest_gpuverify.common.clock import parse_iso_utc  # noqa: E402

TARGETS = 8


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hold", type=float, default=4.0, help="seconds each target holds its GPU")
    parser.add_argument(
        "--window",
        type=float,
        default=2.0,
        help="--gpu-window: the default 2 s (the tests' 0.3 s makes each host's sampler read 5 times a second)",
    )
    parser.add_argument(
        "--host-python",
        choices=("gpu-host", "this"),
        default="gpu-host",
        help="the hosts' python: a site of the plugin and its requirements only, or this machine's",
    )
    parser.add_argument(
        "--cpu-per-host",
        action="store_true",
        help="pin each host's sshd (its workers, samplers and tools) to a core of its own",
    )
    args = parser.parse_args()
    if sshd_unavailable():
        print(f"skipped: {sshd_unavailable()}")
        return 1
    import docker

    from pytest_gpuverify.cli import demo
    from pytest_gpuverify.records.artifact import read_artifact

    client = docker.from_env()
    demo.ensure_rootfs_image(client)
    root = Path(tempfile.mkdtemp(prefix="gv-fanout-"))
    python = host_python(root / "host-python") if args.host_python == "gpu-host" else sys.executable
    cpus = sorted(os.sched_getaffinity(0))
    if args.cpu_per_host and len(cpus) < 2:
        print("--cpu-per-host needs 2 cores")
        return 1
    print(
        f"hosts' python: {python} ({args.host_python}); hold {args.hold:g} s; window {args.window:g} s; "
        f"{args.repeats} repeats; cores: {'one per host' if args.cpu_per_host else f'{len(cpus)} shared by all'}"
    )
    # the hosts' background samplers stay between the runs, as on hosts in use (default: 5 minutes)
    with ssh_hosts(root, client, [("hostA", 2), ("hostB", 2)], python=python, sampler_idle_s=300) as hosts:
        if args.cpu_per_host:  # before any session: what a host's sshd starts inherits its core
            for host, cpu in zip(hosts.hosts, cpus):
                assert host.proc is not None
                os.sched_setaffinity(host.proc.pid, {cpu})
        source = (hosts.repo / "op_tests/test_gemm_a8w8.py").read_text()
        names = []
        for i in range(TARGETS):
            (hosts.repo / f"op_tests/test_hold{i}.py").write_text(source + f"\nimport time\ntime.sleep({args.hold})\n")
            names.append(f"op_tests/test_hold{i}.py")
        git = ["git", "-C", str(hosts.repo), "-c", "user.name=b", "-c", "user.email=b@localhost"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "hold targets"], check=True)
        empty = hosts.root / "no-checkout"
        empty.mkdir()
        # untimed, first: what hosts in use have done already (compiled the python caches, started the samplers)
        warm = hosts.pytest(
            "--gpu-hosts",
            "all",
            "--gpu-window",
            f"{args.window:g}",
            "--ticket",
            "warm-up",
            *names[:4],
            cwd=empty,
            timeout=600,
        )
        if warm.returncode != 0:
            print(f"warm-up run failed (exit {warm.returncode})\n{warm.stdout[-2000:]}")
            return 1
        walls: dict[str, list[float]] = {"1 host (2 GPUs)": [], "2 hosts (4 GPUs)": []}
        spans: dict[str, list[float]] = {"1 host (2 GPUs)": [], "2 hosts (4 GPUs)": []}
        for rep in range(args.repeats):
            for label, where in (
                ("1 host (2 GPUs)", ["--gpu-host", "hostA"]),
                ("2 hosts (4 GPUs)", ["--gpu-hosts", "all"]),
            ):
                ticket = f"B{rep}-{len(where[1])}"
                t0, epoch0 = time.monotonic(), time.time()
                r = hosts.pytest(
                    *where, "--gpu-window", f"{args.window:g}", "--ticket", ticket, *names, cwd=empty, timeout=600
                )
                wall = time.monotonic() - t0
                arts = [read_artifact(p) for h in hosts.hosts for p in (h.tickets / ticket).glob("bench_*.json")]
                verdicts = [a.verdict for a in arts]
                if r.returncode != 0 or verdicts.count("PASS") != TARGETS:
                    print(f"{label}: run failed (exit {r.returncode}, verdicts {verdicts})\n{r.stdout[-2000:]}")
                    return 1
                walls[label].append(wall)
                starts = [parse_iso_utc(a.timeline.command_started) for a in arts]
                ends = [parse_iso_utc(a.timeline.command_ended) for a in arts]
                used = sorted({(a.host, a.gpu.index) for a in arts})
                spans[label].append(max(ends) - min(starts))
                print(
                    f"run {rep + 1} {label}: {wall:.2f} s, {TARGETS / wall:.3f} targets/s, all {TARGETS} PASS; "
                    f"start-up {min(starts) - epoch0:.1f} s, commands {min(starts) - epoch0:.1f}..{max(ends) - epoch0:.1f} s "
                    f"(span {max(ends) - min(starts):.1f} s) on {len(used)} GPUs {used}"
                )
        one, two = (statistics.median(w) for w in walls.values())
        print(
            f"\nmedian wall: 1 host {one:.2f} s ({TARGETS / one:.3f} targets/s), "
            f"2 hosts {two:.2f} s ({TARGETS / two:.3f} targets/s)"
        )
        print(
            f"ratio 2 hosts / 1 host wall: {two / one:.3f} (target <= 0.6: {'met' if two / one <= 0.6 else 'NOT met'})"
        )
        s1, s2 = (statistics.median(s) for s in spans.values())
        print(f"ratio of the command spans (first start to last end): {s2 / s1:.3f} (ideal 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
