"""Edits of a copied ticket folder (artifact, raw log, its trailer) that `gpuverify check` must name, and
check's run on one file: shared by the tamper tests (test_check_tamper.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from pytest_gpuverify.cli.main import main


def copy_of(made, case: str, tmp_path: Path) -> Path:
    """The case's ticket folder copied whole, under its own name (the artifact's key names it)."""
    here = tmp_path / case.replace(" ", "_") / made[case].parent.name
    shutil.copytree(made[case].parent, here)
    return here / made[case].name


def check(path: Path, capsys, *extra: str) -> tuple[int, list[str], str]:
    rc = main(["check", str(path), *extra])
    out = capsys.readouterr().out
    return rc, [line.removeprefix("MISMATCH ") for line in out.splitlines() if line.startswith("MISMATCH ")], out


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def raw_of(path: Path) -> Path:
    return path.parent / json.loads(path.read_text())["raw_output"]


def reseal(path: Path) -> None:
    """The log edited, and the artifact's sha256 and size made to match it: consistent by construction."""
    raw = raw_of(path)
    edit(
        path,
        lambda d: d.update(
            raw_output_sha256=hashlib.sha256(raw.read_bytes()).hexdigest(), raw_output_bytes=raw.stat().st_size
        ),
    )


def set_gpu(d: dict, index: int) -> None:
    d["gpu"]["index"] = d["gpu"]["hip_index"] = index
    d["gpus"][0] = dict(d["gpu"])


def strip_trailer(path: Path) -> None:
    raw = raw_of(path)
    raw.write_bytes(b"".join(raw.read_bytes().splitlines(keepends=True)[:-1]))


def forge_trailer(path: Path, **fields) -> None:
    raw = raw_of(path)
    lines = raw.read_bytes().splitlines(keepends=True)
    prefix, data = lines[-1].split(b": ", 1)
    lines[-1] = prefix + b": " + json.dumps({**json.loads(data), **fields}).encode() + b"\n"
    raw.write_bytes(b"".join(lines))


def moved(text: str, seconds: float) -> str:
    """An artifact's ISO time moved, written as the engine writes it (ts to the ms, the timeline to the us)."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    spec = "milliseconds" if len(text.rsplit(".", 1)[-1]) == 4 else "microseconds"
    return when.isoformat(timespec=spec).replace("+00:00", "Z")


def move_timeline(path: Path, seconds: float) -> dict:
    """Every time of the artifact's timeline moved; the moved timeline."""
    edit(path, lambda d: d["timeline"].update({k: moved(v, seconds) for k, v in d["timeline"].items() if v}))
    return json.loads(path.read_text())["timeline"]
