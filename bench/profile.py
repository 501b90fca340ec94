"""Where a session's milliseconds go, phase by phase: the `--gpu-profile` lines of sessions on the
simulated ROCm host (real container, fake GPU tools), for a first and a second session of one target
and a second session of 10 targets, in the container and on the host (--gpu-container none).
Printed, and written to --out.

The simulated host is the demo's (the GPUs read through the simulated amdsmi library, as on a ROCm
install; --tools: the tools only); the checkout is byte-compiled first, as pip does at install.

    python bench/profile.py [--out bench/results/profile.txt] [--window 2] [--tools]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.cli import demo  # noqa: E402
from pytest_gpuverify.execute.container import docker_client  # noqa: E402

TRIVIAL = "op_tests/test_rmsnorm2d.py"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--tools", action="store_true", help="read the GPUs with the tools, not the amdsmi library")
    args = ap.parse_args()
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "pytest_gpuverify"), quiet=1)
    root = Path(tempfile.mkdtemp(prefix="gv-profile-"))
    client = docker_client()
    name = "gpuverify-profile"
    env_path, repo, sim_bin = demo.setup_sandbox(root, client, container=name)
    report: list[str] = []
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
        tmp = root / "tmp"  # a folder of the user's own: the first session below is a first one
        tmp.mkdir(mode=0o700)
        python_dir = str(Path(sys.executable).parent)  # the host's python3 is the one pytest runs on
        env = dict(
            demo.sandbox_environ(sim_bin),
            PATH=f"{sim_bin}:{python_dir}:{os.environ['PATH']}",
            TMPDIR=str(tmp),
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
            ),
        )
        if args.tools:
            env.pop("ROCM_PATH")
        report.append(f"# GPU readings: {'the tools' if args.tools else 'the amdsmi library, in-process'}")
        n = 0
        for place in (("container", ()), ("host", ("--gpu-container", "none"))):
            for what, count in (
                ("first session, 1 target", 1),
                ("second session, 1 target", 1),
                ("second session, 10 targets", 10),
            ):
                n += 1
                proc = subprocess.run(
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
                        f"P-{n}",
                        "--gpu-profile",
                        *place[1],
                        *targets[:count],
                    ],
                    cwd=repo,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                lines = proc.stdout.splitlines()
                at = next((i for i, ln in enumerate(lines) if "gpuverify profile" in ln), None)
                if proc.returncode != 0 or at is None:
                    raise SystemExit(f"session failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
                report.append(f"== {place[0]}: {what}")
                report += [ln for ln in lines[at + 1 :] if not ln.startswith("=")]
            if place[0] == "container":
                tmp_first = tmp / "first-host"  # the host's first session too, with an empty cache
                tmp_first.mkdir(mode=0o700)
                env["TMPDIR"] = str(tmp_first)
        print("\n".join(report))
        if args.out:
            args.out.write_text("\n".join(report) + "\n", encoding="utf-8")
        return 0
    finally:
        demo.remove_sandbox_containers(client, [name])
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
