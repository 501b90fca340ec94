"""A target's repeated runs under one lock on one GPU set: ``repeats`` rounds, each running every side
once (A, B, A, B ... for ``--gpu-ab``), all into one raw log with the engine's begin and end lines
around each run (runs_log.py). The caller holds the lock for the whole loop."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.execute.base import ExecOutcome, Interrupted
from pytest_gpuverify.records.artifact import RunSlice
from pytest_gpuverify.records.raw_log import marker, new_nonce


@dataclass
class Side:
    """How one checkout's command runs: its label (A base, B head, None without A/B), its sha, and
    the command, environment (its own JIT caches) and working directory in the container."""

    label: str | None
    checkout: str | None
    argv: Callable[[int], list[str]]  # run number -> the command (an inner pytest's report path differs)
    env: dict[str, str]
    workdir: str
    notes: list[str] = field(default_factory=list)
    caches: Callable[[int], dict[str, str]] | None = None  # run number (0: the warm-up) -> its cache variables


def schedule(repeats: int, sides: list[Side], warmup: bool = False) -> list[tuple[int, Side]]:
    """Interleaved: round 1 runs every side, then round 2 ... so drift hits both sides alike; ``warmup``:
    first an unmeasured run 0 of each side (--gpu-ab-cache warm)."""
    first = [(0, side) for side in sides] if warmup else []
    return first + [(n, side) for n in range(1, repeats + 1) for side in sides]


def _append(path: Path, line: bytes) -> None:
    with open(path, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = b"\n" + line
        fh.write(line)


def _fold(total: ExecOutcome, codes: list, res: ExecOutcome, label: str) -> None:
    """The runs as one outcome for the verdict: the first failing exit code, any timeout or death."""
    codes.append(res.exit_code)
    failing = [c for c in codes if c not in (0, None)]
    total.exit_code = failing[0] if failing else None if None in codes else 0
    total.timed_out = total.timed_out or res.timed_out
    total.interrupted = total.interrupted or res.interrupted
    total.container_died = total.container_died or res.container_died
    total.bytes_written += res.bytes_written
    total.duration_s += res.duration_s
    total.problems += [f"{label}: {p}" for p in res.problems]
    total.leftovers += res.leftovers


def _ended(
    out_path: Path,
    nonce: str,
    n: int,
    repeats: int,
    side: Side,
    res: ExecOutcome,
    junit: str | None,
    slices: list[RunSlice],
) -> None:
    end = {
        "exit_code": res.exit_code,
        "timed_out": res.timed_out,
        "interrupted": res.interrupted,
        "container_died": res.container_died,
        "junit_xml": junit,
    }
    _append(out_path, marker(nonce, n, repeats, side.label, "ended", end))
    slices.append(RunSlice(run=n, side=side.label, checkout=side.checkout, **end))


def run_rounds(
    handle,
    sides: list[Side],
    repeats: int,
    out_path: Path,
    timeout_s: float,
    echo=None,
    on_start=None,
    fetch_junit: Callable[[Side, int], str | None] | None = None,
    slices: list[RunSlice] | None = None,
    warmups: list[RunSlice] | None = None,
    after: Callable[[Side, int, float], None] | None = None,
) -> tuple[ExecOutcome, list[RunSlice]]:
    """Run the schedule; stop early only when a run timed out, was interrupted or lost its container.
    ``slices`` (filled as runs end) keeps what ran when Ctrl-C ends the loop; ``warmups`` (not None: warm
    up first) gets the unmeasured runs 0, whose exit codes are no part of the outcome's; ``after(side, n,
    started)`` runs once each run ended (``started``: its start, epoch seconds)."""
    nonce, total = new_nonce(), ExecOutcome()
    codes: list[int | None] = []
    slices = [] if slices is None else slices
    for n, side in schedule(repeats, sides, warmup=warmups is not None):
        label = f"run {n}" + (f" side {side.label}" if side.label else "")
        into = slices if n else warmups
        assert into is not None  # a run 0 only with warmups
        begin = {"checkout": side.checkout, "workdir": side.workdir, **({} if n else {"warmup": True})}
        _append(out_path, marker(nonce, n, repeats, side.label, "begins", begin))
        env = {**side.env, **side.caches(n)} if side.caches is not None else side.env
        started = time.time()
        try:
            res = handle.stream_to_file(
                side.argv(n), out_path, env=env, workdir=side.workdir, timeout_s=timeout_s, echo=echo, on_start=on_start
            )
        except Interrupted as exc:  # the log still says how this run ended
            _ended(out_path, nonce, n, repeats, side, exc.outcome, None, into)
            _fold(total, codes if n else [], exc.outcome, label)
            raise Interrupted(total) from None
        _ended(out_path, nonce, n, repeats, side, res, fetch_junit(side, n) if fetch_junit is not None else None, into)
        _fold(total, codes if n else [], res, label)
        if after is not None:
            after(side, n, started)
        if res.timed_out or res.interrupted or res.container_died:
            break
    return total, slices
