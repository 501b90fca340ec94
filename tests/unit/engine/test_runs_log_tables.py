"""A raw log of repeated runs (``--gpu-repeats``, ``--gpu-ab``) read run by run (engine/runs_log.py): a
table printed again under one title is told apart within each run, the counting starting again in each,
so the second table of one run pairs with the second table of every other run; and never with the first."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.config.targets import BENCH
from pytest_gpuverify.engine.runs_log import parse_log
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.raw_log import marker

NONCE = "0123456789abcdef"


def report(causal_off: float, causal_on: float, settings: bool) -> str:
    tables = []
    for causal, tflops in ((False, causal_off), (True, causal_on)):
        above = f"[causal={causal}]\n" if settings else ""
        tables.append(f"{above}attention-fwd:\n     N_CTX     Triton\n0   1024.0  {tflops:9.6f}\n")
    return "".join(tables)


def ab_log(tmp_path: Path, settings: bool) -> Path:
    order = [("A", 1), ("B", 1), ("A", 2), ("B", 2), ("A", 3), ("B", 3)]
    log = tmp_path / "raw.log"
    with open(log, "wb") as fh:
        for side, run in order:
            fh.write(marker(NONCE, run, 3, side, "begins", {"checkout": side}))
            on = 100.0 if side == "A" else 90.0  # the head 10% slower with causal on only
            fh.write(report(80.0 + run / 10, on + run / 10, settings).encode())
            fh.write(marker(NONCE, run, 3, side, "ended", {"exit_code": 0}))
    return log


def test_each_run_names_its_second_table_alike(tmp_path: Path) -> None:
    parsed = parse_log(BENCH, ab_log(tmp_path, settings=False), ParseContext())
    by_run: dict[tuple, list] = {}
    for row in parsed.perf:
        by_run.setdefault((row.side, row.run), []).append((row.table, row.shape, row.metrics["Triton"]))
    assert len(by_run) == 6
    for (side, run), rows in by_run.items():
        on = (100.0 if side == "A" else 90.0) + run / 10
        assert rows == [("attention-fwd", "N_CTX=1024.0", 80.0 + run / 10), ("attention-fwd #2", "N_CTX=1024.0", on)]


def test_the_printed_settings_name_the_repeat_in_every_run(tmp_path: Path) -> None:
    parsed = parse_log(BENCH, ab_log(tmp_path, settings=True), ParseContext())
    names = {(row.run, row.side): [] for row in parsed.perf}
    for row in parsed.perf:
        names[(row.run, row.side)].append(row.table)
    assert set(map(tuple, names.values())) == {("attention-fwd", "attention-fwd [causal=True]")}
    # one key per setting and side, each holding one value per run: never the two settings pooled
    values: dict[tuple, list[float]] = {}
    for row in parsed.perf:
        values.setdefault((row.table, row.side), []).append(row.metrics["Triton"])
    assert values[("attention-fwd [causal=True]", "B")] == [90.1, 90.2, 90.3]
    assert values[("attention-fwd", "B")] == [80.1, 80.2, 80.3]
