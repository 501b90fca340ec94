"""The raw log's own lines, written and read here only.

A target's raw log is the command's output, unchanged, plus lines of the engine's:
- around each of a target's repeated runs (``repeats``, ``--gpu-ab``) a begin and an end line,
  each carrying a nonce chosen per log and first written on its first line, so a command cannot
  print a line that reads as ours (:func:`marker`, :func:`split_log`);
- once the command has ended, the trailer: what the artifact's run record must say (exit code,
  timeout, interrupt, container death, where it ran, its timeline and its watch: foreign processes,
  clock events and SM clocks, watch_seal.py), as JSON of names and numbers only (:func:`seal_log`,
  :func:`read_trailer`). Logs sealed before the timeline or the watch was added lack that field; they
  are read as they were.

``gpuverify check`` holds the artifact to the trailer, so an exit code or a time edited in the
artifact alone no longer agrees with anything. It does not make the log trustworthy: whoever edits
the log and its sha256 together can edit this line too; only a signature covers that. No command
text goes into the trailer (the run's user controls it), so no parser reads a result out of it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_gpuverify.records.artifact import GpuWatch
from pytest_gpuverify.records.machine import MachineRecord, machine_digest
from pytest_gpuverify.records.watch_seal import sealed_watch

_LINE = re.compile(rb"^\[gpuverify ([0-9a-f]{16})\] run (\d+) of (\d+)(?: side ([AB]))? (begins|ended): (\{.*\})\s*$")


def new_nonce() -> str:
    return secrets.token_hex(8)


def marker(nonce: str, run: int, of: int, side: str | None, word: str, fields: dict[str, Any]) -> bytes:
    side_part = f" side {side}" if side else ""
    return f"[gpuverify {nonce}] run {run} of {of}{side_part} {word}: {json.dumps(fields, sort_keys=True)}\n".encode()


@dataclass
class Segment:
    run: int
    side: str | None
    begin: dict[str, Any]
    end: dict[str, Any] | None  # None: the log stops inside this run (interrupted, truncated)
    first_line: int  # the log's line number of the run's first output line
    lines: list[bytes] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"run {self.run}" + (f" side {self.side}" if self.side else "")


def split_log(path: Path) -> list[Segment] | None:
    """The runs of a log written by :func:`marker`; None when it is a single run's plain log."""
    segments: list[Segment] = []
    nonce: bytes | None = None
    current: Segment | None = None
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            found = _LINE.match(line.rstrip(b"\n")) if line.startswith(b"[gpuverify ") else None
            if lineno == 1:
                if found is None or found.group(5) != b"begins":
                    return None
                nonce = found.group(1)
            if found is not None and found.group(1) == nonce:
                fields = json.loads(found.group(6))
                if found.group(5) == b"begins":
                    side = found.group(4).decode() if found.group(4) else None
                    current = Segment(int(found.group(2)), side, fields, None, lineno + 1)
                    segments.append(current)
                elif current is not None:
                    current.end, current = fields, None
                continue
            if current is not None:
                current.lines.append(line)
    return segments


PREFIX = b"[gpuverify] run ended: "


TIMELINE = "timeline"  # the field added after the others: a log sealed before it lacks it
WATCH = "watch"  # added after the timeline: a log sealed before it lacks it
_ADDED = frozenset({TIMELINE, WATCH})  # the fields an older trailer may lack


# the machine record's digest (records/machine.py), sealed where the artifact has one; older logs lack it
MACHINE = "machine_sha256"

_TAIL_BYTES = 4096
_MAX_TRAILER = 1 << 22  # a watch of many runs on many GPUs: the trailer grows with it, yet stays bounded


def trailer_fields(
    *,
    exit_code: int | None,
    timed_out: bool,
    interrupted: str | None,
    container_died: bool,
    host: str | None,
    container: str | None,
    gpus: list[int | None],
    timeline: dict[str, str | None] | None,
    watch: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "exit_code": exit_code,
        "timed_out": timed_out,
        "interrupted": interrupted,
        "container_died": container_died,
        "host": host,
        "container": container,
        "gpus": gpus,
        TIMELINE: timeline,
        WATCH: watch,
    }


def append_trailer(log: Path, fields: dict[str, Any]) -> None:
    """Append the trailer, on a line of its own, and flush it to disk."""
    with open(log, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        newline = b""
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            newline = b"" if fh.read(1) == b"\n" else b"\n"
        fh.write(newline + PREFIX + json.dumps(fields, ensure_ascii=True).encode() + b"\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_trailer(log: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(fields, None) from the log's last line; (None, why) when that line is not a trailer. The fields
    of an older trailer lack ``watch``, or ``timeline`` and ``watch``."""
    with open(log, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        want = _TAIL_BYTES
        while True:  # back until the last line's start is in view: a sealed watch makes it long
            fh.seek(max(0, size - want))
            tail = fh.read()
            if b"\n" in tail[:-1] or want >= min(size, _MAX_TRAILER):
                break
            want *= 4
    if not tail.endswith(b"\n"):
        return None, "the raw output does not end with the engine's trailer line"
    last = tail[:-1].rsplit(b"\n", 1)[-1]
    if not last.startswith(PREFIX):
        return None, "the raw output does not end with the engine's trailer line"
    try:
        fields = json.loads(last[len(PREFIX) :])
    except ValueError:
        return None, "the raw output's trailer line is not the engine's JSON"
    current = set(
        trailer_fields(
            exit_code=None,
            timed_out=False,
            interrupted=None,
            container_died=False,
            host=None,
            container=None,
            gpus=[],
            timeline=None,
        )
    )
    if not isinstance(fields, dict) or not current - _ADDED <= set(fields) - {MACHINE} <= current:
        return None, "the raw output's trailer line does not hold the engine's fields"
    return fields, None


def seal_log(
    log: Path,
    facts,
    host: str,
    container: str | None,
    gpus: list[int | None],
    timeline: dict[str, str | None],
    watch: list[GpuWatch],
    machine: MachineRecord | None = None,
) -> None:
    """The trailer of a run: ``facts`` (the artifact's RunRecord), where the artifact says it ran, its
    ``timeline`` (every time in it is taken by then: the GPUs are let go of before the seal), its
    ``watch`` records (final once the command ended: the execute phase sets them before it lets go of the
    GPUs) and the digest of its ``machine`` record where it has one."""
    fields = trailer_fields(
        exit_code=facts.exit_code,
        timed_out=facts.timed_out,
        interrupted=facts.interrupted,
        container_died=facts.container_died,
        host=host,
        container=container,
        gpus=gpus,
        timeline=timeline,
        watch=sealed_watch(watch),
    )
    digest = machine_digest(machine)
    append_trailer(log, {**fields, MACHINE: digest} if digest else fields)
