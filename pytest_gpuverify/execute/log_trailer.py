"""The line the engine appends to its copy of a command's output once the command has ended.

It states, in the raw log itself, what the artifact's run record must say: the exit code, timeout,
interrupt and container death, where it ran (host, container, GPUs) and when (the artifact's
``timeline``, on which the overlap check rests). ``gpuverify check`` holds the artifact to it, so an
exit code or a time edited in the artifact alone no longer agrees with anything. Logs sealed before
the timeline was added hold the other fields only; they are read as they were.
It does not make the log trustworthy: whoever edits the log and its sha256 together can edit this
line too. Only a signature (:mod:`.signing`) covers that.

The line is JSON of names and numbers only (no command text, which the run's user controls), so no
parser reads a result out of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

PREFIX = b"[gpuverify] run ended: "
TIMELINE = "timeline"  # the field added after the others: a log sealed before it lacks it
_TAIL_BYTES = 4096


def trailer_fields(*, exit_code: Optional[int], timed_out: bool, interrupted: Optional[str], container_died: bool,
                   host: Optional[str], container: Optional[str], gpus: list[Optional[int]],
                   timeline: Optional[dict[str, Optional[str]]]) -> dict[str, Any]:
    return {"exit_code": exit_code, "timed_out": timed_out, "interrupted": interrupted,
            "container_died": container_died, "host": host, "container": container, "gpus": gpus,
            TIMELINE: timeline}


def seal_log(log: Path, facts, host: str, container: Optional[str], gpus: list[Optional[int]],
             timeline: dict[str, Optional[str]]) -> None:
    """The trailer of a run: ``facts`` (the artifact's RunRecord), where the artifact says it ran and
    its ``timeline`` (every time in it is taken by then: the GPUs are let go of before the seal)."""
    append_trailer(log, trailer_fields(
        exit_code=facts.exit_code, timed_out=facts.timed_out, interrupted=facts.interrupted,
        container_died=facts.container_died, host=host, container=container, gpus=gpus, timeline=timeline))


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


def read_trailer(log: Path) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """(fields, None) from the log's last line; (None, why) when that line is not a trailer. The fields
    of an older trailer lack ``timeline``."""
    with open(log, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL_BYTES))
        tail = fh.read()
    if not tail.endswith(b"\n"):
        return None, "the raw output does not end with the engine's trailer line"
    last = tail[:-1].rsplit(b"\n", 1)[-1]
    if not last.startswith(PREFIX):
        return None, "the raw output does not end with the engine's trailer line"
    try:
        fields = json.loads(last[len(PREFIX):])
    except ValueError:
        return None, "the raw output's trailer line is not the engine's JSON"
    current = set(trailer_fields(exit_code=None, timed_out=False, interrupted=None, container_died=False,
                                 host=None, container=None, gpus=[], timeline=None))
    if not isinstance(fields, dict) or set(fields) not in (current, current - {TIMELINE}):
        return None, "the raw output's trailer line does not hold the engine's fields"
    return fields, None
