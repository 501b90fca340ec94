"""What an installed plugin that a run does not switch on costs pytest's start: ``pytest --co -q`` in an
empty folder with the plugin loaded against the same with ``-p no:gpuverify`` (where the package is
installed; else the plugin named with ``-p``), paired and interleaved (the order alternates within each
pair), wall time of the whole process and its CPU time (user + system: less moved by other work on a
busy machine). Prints each side's medians, the median of the paired differences in ms and the ratio of
the medians, in one run. The goal: within 5 ms.

    python bench/plugin_start.py [--pairs 20] [--root CHECKOUT] [--all-plugins] [--out bench/results/plugin_start.txt]

``--root``: the checkout whose package is measured (default: this one; another commit's tree gives
the figure before a change). ``--installed``: measure a regular install (a new venv with this pytest
and the package from ``--root`` installed as a wheel would be), not this environment: a development
install's editable-import finder costs ~18 ms on the package's first import, which users never pay.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PLUGIN = "pytest_gpuverify.plugin"


def commands(empty: Path, all_plugins: bool) -> tuple[list[str], list[str]]:
    """(with the plugin, without it). By default no plugin of the environment loads by itself and this
    one is named with ``-p``, as its entry point loads it: the other plugins' own start varies by tens
    of ms from run to run and would hide a few. ``all_plugins``: as installed, against ``-p no:NAME``."""
    base = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", str(empty)]
    names = [ep.name for ep in entry_points(group="pytest11") if ep.value == PLUGIN]
    if all_plugins and names:
        return base, [*base, "-p", f"no:{names[0]}"]
    return [*base, "-p", PLUGIN], base


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one pytest process."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 5):  # 5: no tests collected, as in an empty folder
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err.read().decode()[-400:]}")
    return took, usage.ru_utime + usage.ru_stime


PLUGIN_IMPORT = "import pytest; import pytest_gpuverify.plugin"
LOADED = (
    "import sys, pytest; pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '-p', 'pytest_gpuverify.plugin', sys.argv[1]]); "
    "print(' '.join(sorted(m for m in sys.modules if m.startswith('pytest_gpuverify'))))"
)


def plugin_import_us(env: dict[str, str]) -> int:
    """The entry point's own import (its cumulative line in ``-X importtime``), in microseconds."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PLUGIN_IMPORT], env=env, capture_output=True, text=True
    ).stderr
    return max(
        int(line.split("|")[1]) for line in err.splitlines() if line.rstrip().endswith("pytest_gpuverify.plugin")
    )


def figures(name: str, ons: list[float], offs: list[float]) -> list[str]:
    diffs = [(a - b) * 1000 for a, b in zip(ons, offs)]
    med_on, med_off = statistics.median(ons) * 1000, statistics.median(offs) * 1000
    q1, _, q3 = statistics.quantiles(diffs, n=4)
    verdict = "met" if abs(statistics.median(diffs)) <= 5 else "NOT met"
    return [
        f"{name}: with the plugin (not switched on) median {med_on:.1f} ms, without it {med_off:.1f} ms",
        f"{name}: difference, median of pairs {statistics.median(diffs):+.1f} ms (quartiles {q1:+.1f} .. {q3:+.1f}); "
        f"ratio of medians {med_on / med_off:.3f}; within 5 ms: {verdict}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--root", type=Path, default=HERE, help="the checkout whose pytest_gpuverify is measured")
    ap.add_argument("--out", type=Path, help="also write the lines to this file")
    ap.add_argument("--all-plugins", action="store_true", help="every installed plugin loads, as in a user's run")
    ap.add_argument("--installed", action="store_true", help="a regular install in a new venv (see above)")
    args = ap.parse_args()
    root = args.root.resolve()
    if args.installed:
        return in_new_venv(root, sys.argv[1:])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    env.pop("PYTEST_ADDOPTS", None)
    if not args.all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory(prefix="gv-plugin-start-") as tmp:
        empty = Path(tmp)
        on, off = commands(empty, args.all_plugins)
        for cmd in (on, off):  # warm the file cache and the bytecode
            timed(cmd, env, empty)
        ons, offs = [], []
        for i in range(args.pairs):
            # both runs of a pair under one hash seed: string hashing orders sets and dicts differently
            # in each process, which moves pytest's own start by tens of ms from run to run
            seeded = dict(env, PYTHONHASHSEED=str(i + 1))
            if i % 2:
                offs.append(timed(off, seeded, empty))
                ons.append(timed(on, seeded, empty))
            else:
                ons.append(timed(on, seeded, empty))
                offs.append(timed(off, seeded, empty))
        loaded = (
            subprocess.run(
                [sys.executable, "-c", LOADED, str(empty)], env=env, cwd=empty, capture_output=True, text=True
            )
            .stdout.splitlines()[-1]
            .split()
        )  # the last line: pytest's own output comes first
    imports = [plugin_import_us(env) for _ in range(args.pairs)]
    lines = [
        f"# pytest --co -q in an empty folder, {args.pairs} interleaved pairs; package from {root}; "
        + ("every installed plugin loaded" if args.all_plugins else "no other plugin loaded"),
        f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f} at the end",
        *figures("wall", [w for w, _ in ons], [w for w, _ in offs]),
        *figures("cpu ", [c for _, c in ons], [c for _, c in offs]),
        f"the entry point's import (-X importtime, pytest already imported): median "
        f"{statistics.median(imports) / 1000:.2f} ms",
        f"the package's modules in a run with the plugin not switched on: {' '.join(loaded)}",
    ]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


def in_new_venv(root: Path, argv: list[str]) -> int:
    """This script again, in a new venv holding this pytest and the package installed from ``root``."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="gv-plugin-start-venv-") as tmp:
        python = Path(tmp) / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", tmp], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, f"pytest=={pytest.__version__}"], check=True)
        subprocess.run([*pip, "--no-deps", str(root)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        rest, skip = [], False
        for a in argv:  # --root is the install's now: the venv's copy is the one imported
            if skip or a == "--installed" or a.startswith("--root"):
                skip = a == "--root"
                continue
            rest.append(a)
        return subprocess.run([str(python), __file__, "--root", tmp, *rest], env=env, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main())
