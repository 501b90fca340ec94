"""Artifacts that pass ``gpuverify check`` without a GPU or a session, for the history store's writer tests and
bench (tests/e2e/test_history_store.py, bench/history_writers.py): a run that never started (INCONCLUSIVE with
the re-derived reason), each made distinct by its time."""

from __future__ import annotations

from pathlib import Path


def never_ran(folder: Path, n: int) -> Path:
    from pytest_gpuverify.records.artifact import Artifact, RunRecord, TargetRecord

    path = folder / f"A{n}" / "bench_w.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    art = Artifact(
        topic="w",
        ts=f"2026-03-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        verdict="INCONCLUSIVE",
        reasons=["the command never ran"],
        run=RunRecord(ran=False),
        target=TargetRecord(name="w", kind="bench"),
    )
    path.write_text(art.model_dump_json())
    return path


def held_gpu(
    n: int,
    uuid: str = "GPU-A",
    timed_out: bool = False,
    ecc_uncorrected: int | None = 0,
    driver: str = "amdgpu 6.12.12",
    host: str = "h1",
    no_gpu: bool = False,
):
    """An artifact of a run that held GPU ``uuid`` (index 0) on ``host`` under ``driver``: timed out or not, with
    the GPU reader's uncorrected ECC count; ``no_gpu``: a run that got no GPU. Each made distinct by its time."""
    from pytest_gpuverify.records.artifact import Artifact, GpuRecord, RunRecord, TargetRecord
    from pytest_gpuverify.records.machine import MachineGpu, MachineRecord

    ts = f"2026-03-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
    target = TargetRecord(name="w", kind="bench")
    if no_gpu:
        reason = "NO_GPU: no idle GPU: 1 busy (gpu 0: 99% use)"
        return Artifact(
            topic="w",
            ts=ts,
            host=host,
            verdict="INCONCLUSIVE",
            reasons=[reason],
            run=RunRecord(blocked=[reason]),
            target=target,
        )
    gpu = GpuRecord(index=0, hip_index=0, arch="gfx942", name="MI300X", uuid=uuid)
    machine = MachineRecord(
        vendor="rocm",
        driver=driver,
        gpus=[
            MachineGpu(
                index=0, name="MI300X", arch="gfx942", uuid=uuid, ecc_uncorrected=ecc_uncorrected, ecc_corrected=0
            )
        ],
    )
    return Artifact(
        topic="w",
        ts=ts,
        host=host,
        gpu=gpu,
        gpus=[gpu],
        machine=machine,
        verdict="INCONCLUSIVE" if timed_out else "PASS",
        reasons=["the command timed out"] if timed_out else [],
        timed_out=timed_out,
        run=RunRecord(ran=True, timed_out=timed_out, exit_code=None if timed_out else 0),
        target=target,
    )


def exported_runs(folder: Path, first: int, count: int) -> Path:
    """An export (JSONL) of ``count`` real runs, numbered from ``first``, whose artifacts lie where the lines
    say: ``history import`` verifies each run as ``history add`` does, so made-up lines are refused."""
    import subprocess
    import sys

    cli = [sys.executable, "-m", "pytest_gpuverify.cli.main"]
    arts = [never_ran(folder / f"runs-{first}", n) for n in range(first, first + count)]
    scratch, lines = folder / f"runs-{first}.db", folder / f"runs-{first}.jsonl"
    for at in range(0, len(arts), 500):  # the command line of one add stays short
        part = [str(a) for a in arts[at : at + 500]]
        subprocess.run([*cli, "history", "add", *part, "--store", str(scratch)], check=True, capture_output=True)
    subprocess.run([*cli, "history", "export", "--store", str(scratch), "-o", str(lines)], check=True)
    return lines
