"""`gpuverify compare`'s false calls and power over many rows at once, on the simulated host's CPUs.

A lab harness prints a checked line and one table of ``--rows`` shapes (a time and TFLOPS per shape, so
2 x rows figures); each run's time of a shape is its true time x (1 + noise), the noise normal with the
chosen CV (GPU kernel timings: 1-3% from run to run). Each run's output is parsed by the real bench
parser (its rows numbered by run, as the engine numbers a repeated target's runs) into PASS artifacts
of like work, and each pair of artifacts goes through `decide`, the path `gpuverify compare` takes after
`gpuverify check` (see bench/compare_power.py for why check is left out).

    python3 bench/compare_fdr.py [--cvs 0.01,0.02,0.03] [--rows 200] [--runs 5] [--pairs 50] [--planted 5]

Two cases per CV: an A/A (one commit both sides), and a head with ``--planted`` shapes ``--change``
slower. Prints per case: the rows called IMPROVED or REGRESSED per compare (the A/A's are all false),
the compares with any false call, the planted shapes found (both figures called REGRESSED), SAME and
INCONCLUSIVE shares, and how often the geometric-mean summary's interval held the true gain.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.compare.command import decide  # noqa: E402
from pytest_gpuverify.compare.core import IMPROVED, INCONCLUSIVE, REGRESSED, SAME, Rule  # noqa: E402
from pytest_gpuverify.parsers.reader import parse_output  # noqa: E402
from pytest_gpuverify.records.artifact import Artifact, GpuRecord, TargetRecord  # noqa: E402


def shapes(count: int) -> list[tuple[int, int, int, float]]:
    """``count`` GEMM shapes with a time roughly in proportion to their work."""
    out = []
    for i in range(count):
        m, n, k = 64 * (1 + i % 16), 1024 * (1 + (i // 16) % 8), 4096 * (1 + i // 128)
        out.append((m, n, k, 20.0 + 2 * m * n * k / 1e9))
    return out


def harness_output(
    table: list[tuple[int, int, int, float]], scales: dict[int, float], cv: float, shared: float, rng: random.Random
) -> str:
    lines = ["[checkAllclose atol=0.01 rtol=0.01 passed~]", "| m | n | k | us | TFLOPS |", "|--:|--:|--:|---:|---:|"]
    run_shift = rng.gauss(0, shared)  # what one process shares over its rows (its GPU's clocks, placement)
    for i, (m, n, k, us) in enumerate(table):
        t = us * scales.get(i, 1.0) * (1 + run_shift + rng.gauss(0, cv))
        lines.append(f"| {m} | {n} | {k} | {t:.4f} | {2 * m * n * k / (t * 1e-6) / 1e12:.4f} |")
    return "\n".join(lines) + "\n"


def side(table, scales, args, cv: float, rng: random.Random, scratch: Path) -> Artifact:
    rows = []
    for run in range(1, args.runs + 1):
        out = scratch / f"run{run}.log"
        out.write_text(harness_output(table, scales, cv, args.shared, rng))
        parsed = parse_output("bench", out)
        assert parsed.correctness.passed, "the harness's check line was not read"
        rows += [r.model_copy(update={"run": run}) for r in parsed.perf]
    return Artifact(
        topic="lab",
        ts="now",
        verdict="PASS",
        perf=rows,
        command="python3 bench/bench_lab.py",
        target=TargetRecord(name="lab", kind="bench", repeats=args.runs),
        gpus=[GpuRecord(index=0, arch="gfx942", name="MI300X")],
    )


def case(
    label: str, cv: float, planted: dict[int, float], table, args, rule: Rule, rng: random.Random, scratch: Path
) -> str:
    tally: Counter = Counter()
    found_counts, rows_total = [], 0
    true_gain = math.exp(fmean([-math.log(planted.get(i, 1.0)) for i in range(len(table))]))
    shape_of = {f"m={m}, n={n}, k={k}": i for i, (m, n, k, _) in enumerate(table)}
    for _ in range(args.pairs):
        result = decide(side(table, {}, args, cv, rng, scratch), side(table, planted, args, cv, rng, scratch), rule)
        pairs = result.pairs
        rows_total = len(pairs)
        calls = Counter(p.call for p in pairs)
        false = [p for p in pairs if p.call in (IMPROVED, REGRESSED) and shape_of[p.shape] not in planted]
        tally["false rows"] += len(false)
        tally["any false"] += bool(false)
        tally["same"] += calls[SAME]
        tally["inconclusive"] += calls[INCONCLUSIVE]
        hits = Counter(shape_of[p.shape] for p in pairs if shape_of[p.shape] in planted and p.call == REGRESSED)
        found_counts.append(sum(1 for i in planted if hits[i] == 2))  # both figures: time and TFLOPS
        whole = result.summary[0]
        tally["covered"] += (
            whole.ci_low is not None and whole.ci_high is not None and whole.ci_low <= true_gain <= whole.ci_high
        )
    n = args.pairs
    found = (
        f"{fmean(found_counts):.2f} of {len(planted)}; >= {len(planted) - 1} in {sum(c >= len(planted) - 1 for c in found_counts)}"
        f"/{n}"
        if planted
        else "-"
    )
    return (
        f"| {cv:.0%} | {label} | {n} | {rows_total} | {tally['false rows'] / n:.2f} | {tally['any false']}/{n} | {found} "
        f"| {tally['same'] / (n * rows_total):.1%} | {tally['inconclusive'] / (n * rows_total):.1%} "
        f"| {tally['covered']}/{n} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cvs", default="0.01,0.02,0.03", help="each run's noise per row, as CVs (default 0.01,0.02,0.03)"
    )
    parser.add_argument(
        "--shared", type=float, default=0.0, help="a per-process shift shared by its rows, as a CV (default 0)"
    )
    parser.add_argument("--rows", type=int, default=200, help="shapes the harness prints (default 200)")
    parser.add_argument("--runs", type=int, default=5, help="runs (processes) per side (default 5)")
    parser.add_argument("--pairs", type=int, default=50, help="compares per case (default 50)")
    parser.add_argument("--planted", type=int, default=5, help="shapes the head makes slower (default 5)")
    parser.add_argument("--change", type=float, default=0.10, help="their true change (default 0.10)")
    parser.add_argument(
        "--spread", type=float, default=Rule().spread, help="compare's spread gate (default: the rule's)"
    )
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rule = Rule(spread=args.spread)
    table = shapes(args.rows)
    planted = {i: 1 + args.change for i in rng.sample(range(args.rows), args.planted)}
    print(
        f"{args.rows} shapes x (time, TFLOPS) = {2 * args.rows} rows, {args.runs} runs per side, {args.pairs} compares "
        f"per case, a shared per-run shift CV {args.shared:.1%}, seed {args.seed}"
    )
    print(
        f"rule: factor {rule.factor:g}, Welch t on logs, FDR q < {rule.fdr:g} (Benjamini-Hochberg over the compare), "
        f"{rule.confidence:.0%} interval, {rule.least_runs}+ runs, noisy above CV {rule.noisy_cv:.0%}, "
        f"spread gate {rule.spread:g} x CV" + (" (off)" if not rule.spread else "")
    )
    print(
        "\n| CV | case | compares | rows each | rows called falsely per compare | compares with a false call "
        "| planted shapes found (both figures REGRESSED) | SAME | INCONCLUSIVE | summary interval held the true gain |"
    )
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for cv in (float(c) for c in args.cvs.split(",")):
            print(case("A/A", cv, {}, table, args, rule, rng, Path(tmp)), flush=True)
            print(
                case(f"{args.planted} shapes {args.change:.0%} slower", cv, planted, table, args, rule, rng, Path(tmp)),
                flush=True,
            )
    print(
        f"\n{time.monotonic() - started:.0f} s; targets: A/A 0 compares with a false call; planted shapes found "
        f">= {args.planted - 1} of {args.planted} at {args.runs} runs per side"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
