"""Artifacts of GPU holds, made to order, and the overlaps found among them."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.common.clock import iso_utc
from pytest_gpuverify.records.artifact import Artifact, GpuRecord, Timeline
from pytest_gpuverify.verify.exclusivity import find_overlaps, holds_of


def art(host: str, gpus: list[int], start: float, end: float, **tl) -> Artifact:
    timeline = Timeline(
        lock_taken=iso_utc(start),
        command_started=iso_utc(start + 0.001),
        command_ended=iso_utc(end - 0.001),
        lock_released=iso_utc(end),
        **tl,
    )
    records = [GpuRecord(index=g) for g in gpus]
    return Artifact(topic="t", ts=iso_utc(start), host=host, gpu=records[0], gpus=records, timeline=timeline)


def overlaps(*arts: Artifact) -> list:
    holds = []
    for i, a in enumerate(arts):
        mine, why = holds_of(a, Path(f"bench_{i}.json"))
        assert why is None
        holds += mine
    return find_overlaps(holds)
