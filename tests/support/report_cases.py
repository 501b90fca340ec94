"""The reports the page's layout is checked on (and pictured from, bench/report_pictures.py): one target;
an A/B of 120 shapes whose times span three decades (2,400 perf rows, ten runs a side); a target's
history of 10,000 runs with a flat row and a planted step."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from pytest_gpuverify.history.series import Point, RowHistory, TargetHistory
from pytest_gpuverify.history.steps import find_steps
from pytest_gpuverify.records.artifact import AbRecord, Artifact, PerfRow
from pytest_gpuverify.reporting.history_section import history_section
from pytest_gpuverify.reporting.html_report import render

TS = "2026-12-01T10:00:00Z"
AB_SHAPES, AB_RUNS = 120, 10
SLOWER = (7, 50, 111)  # the shapes whose head is 15% slower: the regressions the summary lists first


def _art(topic: str, perf: list[PerfRow], **more) -> Artifact:
    return Artifact(topic=topic, ts=TS, verdict="PASS", host="h200-07", perf=perf, **more)


def one_target_page() -> str:
    """A plain target: six shapes, five runs each, its time, a throughput and an uplift (a ratio)."""
    rng = random.Random(1)
    rows = [
        PerfRow(
            shape=f"M={m}, N=8192, K=8192, dtype=torch.bfloat16",
            name="gemm_a8w8",
            run=run,
            us_median=us * (1 + rng.uniform(-0.02, 0.02)),
            min_us=us * 0.97,
            max_us=us * 1.04,
            metrics={"TFLOPS": 2 * m * 8192 * 8192 / (us * 1e6), "uplift_pct": rng.uniform(5, 30)},
        )
        for m, us in ((1, 41.0), (16, 44.0), (64, 60.0), (256, 151.0), (1024, 560.0), (4096, 2210.0))
        for run in range(1, 6)
    ]
    return render([(Path("/tickets/PERF-1/bench_gemm_a8w8.json"), _art("gemm_a8w8", rows))], [])


def ab_rows() -> list[PerfRow]:
    rng = random.Random(2)
    rows = []
    for k in range(AB_SHAPES):
        base = 40 * (13000 / 40) ** (k / (AB_SHAPES - 1))  # 40 us .. 13,000 us, evenly on a log axis
        for side in ("A", "B"):
            us = base * (1.15 if side == "B" and k in SLOWER else 1.0)
            for run in range(1, AB_RUNS + 1):
                t = us * (1 + rng.gauss(0, 0.01))
                rows.append(
                    PerfRow(
                        shape=f"tokens={16 * (k + 1)}, hidden=7168, experts=256",
                        name="fused_moe",
                        side=side,
                        run=run,
                        us_median=t,
                        min_us=t * 0.98,
                        max_us=t * 1.03,
                    )
                )
    return rows


def ab_page() -> str:
    ab = AbRecord(base_ref="main", base_sha="9f8e7d6c5b4a39281706", head_sha="1a2b3c4d5e6f70819203")
    art = _art("fused_moe", ab_rows(), ab=ab)
    return render([(Path("/tickets/PERF-2/bench_fused_moe.json"), art)], [])


def history_page(runs: int = 10_000) -> str:
    """One target's history of ``runs`` runs, one a commit: a flat row (the same value every run) and a
    row that steps 20% slower 30 commits before the newest."""
    rng = random.Random(3)
    flat = [Point(_sha(k), TS, [12990.0]) for k in range(runs)]
    values = [100.0 * (1.2 if k >= runs - 30 else 1.0) * (1 + rng.gauss(0, 0.005)) for k in range(runs)]
    stepped = [Point(_sha(k), TS, [v]) for k, v in enumerate(values)]
    rows = [
        RowHistory(
            (None, "M=1 N=1280 K=8192", "gemm", "median", "us"), "lower", flat, find_steps([12990.0] * runs, "lower")
        ),
        RowHistory(
            (None, "M=128 N=1280 K=8192", "gemm", "median", "us"), "lower", stepped, find_steps(values, "lower")
        ),
    ]
    history = TargetHistory("gemm", {"gpu_model": "H200"}, rows, runs, ["main"])
    art = _art("gemm", [PerfRow(shape="M=1 N=1280 K=8192", name="gemm", us_median=12990.0)])
    return render(
        [(Path("/tickets/PERF-3/bench_gemm.json"), art)], [], history=history_section([history], "history.db", "main")
    )


def _sha(k: int) -> str:
    return hashlib.sha1(str(k).encode()).hexdigest()


def crowded_page() -> str:
    """What crowds a plot's labels: a FAIL's mark, eight series with long names (the legend wraps), shape
    labels longer than their column (they wrap), values within 0.1% of each other, and negative ones."""
    names = [f"triton_kernel_variant_{k} (num_warps={k + 4}, stages={k % 3 + 2})" for k in range(8)]
    long_shape = "M=8192, N=8192, K=8192, dtype=torch.bfloat16, layout=TN, split_k=4, stages=3, warps=8, extra"
    rows = [
        PerfRow(shape=shape, name=name, us_median=12990.0 + 0.5 * k + j, metrics={"delta (GB/s)": -3.0 + k - j})
        for j, shape in enumerate((long_shape, "N=512", long_shape.replace("8192", "4096")))
        for k, name in enumerate(names)
    ]
    art = Artifact(topic="crowded", ts=TS, verdict="FAIL", host="h200-07", perf=rows, reasons=["SNR 3 dB < 20"])
    return render([(Path("/tickets/PERF-4/bench_crowded.json"), art)], [])
