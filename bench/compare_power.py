"""The error rates of `gpuverify compare`'s default rule, on the simulated host's CPUs.

A lab harness prints a checked line and a table of times (and TFLOPS) per shape; each run's times
are the true time x (1 + noise), the noise normal with the chosen CV, the head's true time the
base's x the chosen change. Each run's output is parsed by the real bench parser (its rows numbered
by run, as the engine numbers a repeated target's runs) into PASS artifacts of like work, and each
pair of artifacts goes through `decide`, the path `gpuverify compare` takes after `gpuverify check`
(check itself is left out: it re-derives artifacts from logs of real sessions, which 100s of sessions
on 2 cores would take hours to make). One compare is one base artifact against one head artifact.

    python3 bench/compare_power.py [--cv 0.03] [--change 0.10] [--runs 5] [--compares 200] [--shapes 1]

Prints, for an A/A (no change), the change slower and the change faster: how many compares called
any row IMPROVED or REGRESSED (and how many the right way), SAME, INCONCLUSIVE.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gpuverify.compare.command import decide  # noqa: E402
from pytest_gpuverify.compare.core import IMPROVED, INCONCLUSIVE, REGRESSED, SAME, Rule  # noqa: E402
from pytest_gpuverify.parsers.reader import parse_output  # noqa: E402
from pytest_gpuverify.records.artifact import Artifact, GpuRecord, TargetRecord  # noqa: E402

SHAPES = ((128, 4096, 4096, 100.0), (256, 4096, 4096, 180.0), (512, 8192, 4096, 610.0))


def harness_output(scale: float, cv: float, shapes: int, rng: random.Random) -> str:
    lines = ["[checkAllclose atol=0.01 rtol=0.01 passed~]", "| m | n | k | us | TFLOPS |", "|--:|--:|--:|---:|---:|"]
    for m, n, k, us in SHAPES[:shapes]:
        t = us * scale * (1 + rng.gauss(0, cv))
        lines.append(f"| {m} | {n} | {k} | {t:.3f} | {2 * m * n * k / (t * 1e-6) / 1e12:.3f} |")
    return "\n".join(lines) + "\n"


def side(scale: float, args: argparse.Namespace, rng: random.Random, scratch: Path) -> Artifact:
    rows = []
    for run in range(1, args.runs + 1):
        out = scratch / f"run{run}.log"
        out.write_text(harness_output(scale, args.cv, args.shapes, rng))
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


def trial(head_scale: float, args: argparse.Namespace, rng: random.Random, scratch: Path) -> Counter:
    calls = Counter(
        p.call
        for p in decide(
            side(1.0, args, rng, scratch), side(head_scale, args, rng, scratch), Rule(factor=args.factor)
        ).pairs
    )
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", type=float, default=0.03, help="each run's noise, as a CV (default 0.03)")
    parser.add_argument("--change", type=float, default=0.10, help="the head's true change (default 0.10)")
    parser.add_argument("--runs", type=int, default=5, help="runs per side (default 5)")
    parser.add_argument("--compares", type=int, default=200, help="compares per case (default 200)")
    parser.add_argument("--shapes", type=int, default=1, choices=(1, 2, 3), help="shapes the harness prints")
    parser.add_argument("--factor", type=float, default=Rule().factor, help="compare's --factor (default: its own)")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rule = Rule(factor=args.factor)
    print(
        f"noise CV {args.cv:.1%} per run, change {args.change:.0%}, {args.runs} runs per side, {args.shapes} shape(s) "
        f"(time and TFLOPS rows), {args.compares} compares per case, seed {args.seed}"
    )
    print(
        f"rule: factor {rule.factor:g}, Welch t on logs, FDR q < {rule.fdr:g} over the compare's rows, SAME inside the "
        f"{rule.confidence:.0%} interval's margin ({rule.least_runs}+ runs per side), noisy above CV {rule.noisy_cv:.0%} "
        "or two clusters" + (f", {rule.spread:g} x CV" if rule.spread else "")
    )
    cases = (
        ("A/A (no change)", 1.0, None),
        (f"{args.change:.0%} slower", 1 + args.change, REGRESSED),
        (f"{args.change:.0%} faster", 1 / (1 + args.change), IMPROVED),
    )
    print(
        "\n| case | compares | any row called | called right (every time/TFLOPS row) | a row called the wrong way "
        "| any SAME | any INCONCLUSIVE |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for label, scale, right in cases:
            tally: Counter = Counter()
            for _ in range(args.compares):
                calls = trial(scale, args, rng, Path(tmp))
                rows = sum(calls.values())
                tally["called"] += bool(calls[IMPROVED] or calls[REGRESSED])
                tally["right"] += bool(right) and calls[right] == rows
                tally["wrong"] += bool(right) and bool(calls[IMPROVED if right == REGRESSED else REGRESSED])
                tally["same"] += bool(calls[SAME])
                tally["inconclusive"] += bool(calls[INCONCLUSIVE])
            rates = {
                key: f"{tally[key]} ({tally[key] / args.compares:.1%})"
                for key in ("called", "right", "wrong", "same", "inconclusive")
            }
            print(
                f"| {label} | {args.compares} | {rates['called']} | {rates['right'] if right else '-'} | "
                f"{rates['wrong'] if right else '-'} | {rates['same']} | {rates['inconclusive']} |"
            )
    print(
        f"\n{3 * args.compares} compares in {time.monotonic() - started:.1f} s; targets: A/A any row called <= 1%, "
        f"a {args.change:.0%} change called right >= 90% with {args.runs} runs per side"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
