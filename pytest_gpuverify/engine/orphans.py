"""Raw logs no artifact claims. Each target's artifact is written as the target ends, so a log no
artifact names is either a run still going (a session, this one or a concurrent one, holds the log's
lock: common/live_files.py) or one stopped before it wrote its artifact (kill -9, an OOM kill, a
node lost, pytest-timeout's ``os._exit``). They are listed, never removed: the session after it,
``gpuverify check DIR`` and ``gpuverify handoff`` name them, a stopped one with its log's last line
or how its command ended."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pytest_gpuverify.common import live_files

LOG_GLOBS = ("bench_*.log", "build_*.log")  # a target's raw output, a declared build's output
WHY = "a raw log no artifact names: its run stopped before it wrote its artifact"
LAST_LINE_CHARS = 160
_TAIL_BYTES = 8192


@dataclass(frozen=True)
class Unclaimed:
    """A raw log no artifact of its folder names."""

    log: Path
    live: bool  # a session still holds it (it writes it now)
    holder: int | None = None  # that session's pid, where this machine can see it
    cause: str = ""  # a stopped one: its last line, or how its command ended

    @property
    def word(self) -> str:
        return "RUNNING" if self.live else "STOPPED"

    def says(self) -> str:
        """What it is, after the log's name: what ``check DIR``, ``handoff`` and a session's summary print."""
        if self.live:
            who = f"pid {self.holder}" if self.holder else "a session on this or another machine"
            return f"no artifact yet: its session is still running ({who} holds the log)"
        return f"{WHY} ({self.cause})"


def claimed_logs(folder: Path) -> set[str]:
    """The names of the logs the folder's artifacts (current and moved aside) name."""
    from pytest_gpuverify.records.artifact import read_artifact

    names: set[str] = set()
    for path in folder.glob("bench_*.json"):
        try:
            art = read_artifact(path)
        except (OSError, ValueError, ValidationError):
            continue  # not an artifact, or a broken one: `check` says so
        names.update(Path(n).name for n in (art.raw_output, *(b.output for b in art.builds)) if n)
    return names


def unclaimed_logs(folder: Path, before: float | None = None) -> list[Unclaimed]:
    """The logs in ``folder`` no artifact there names, each running or stopped; ``before``: only those
    last written before this time (epoch seconds), for a reader that cannot trust the log's lock (a
    session of an older version holds none)."""
    if not folder.is_dir():
        return []
    claimed = claimed_logs(folder)
    found = []
    for pattern in LOG_GLOBS:
        for log in folder.glob(pattern):
            if log.name in claimed:
                continue
            try:
                if before is not None and log.stat().st_mtime >= before:
                    continue
            except OSError:
                continue
            if live_files.held_elsewhere(log):
                found.append(Unclaimed(log, True, live_files.holder_pid(log)))
            else:
                found.append(Unclaimed(log, False, cause=stopped_cause(log)))
    return sorted(found, key=lambda u: u.log)


def orphan_logs(folder: Path, before: float | None = None) -> list[Unclaimed]:
    """The stopped ones of :func:`unclaimed_logs`."""
    return [u for u in unclaimed_logs(folder, before) if not u.live]


def stopped_cause(log: Path) -> str:
    """How far a stopped run's log got: its command's end where the engine sealed it, else its last line."""
    from pytest_gpuverify.records.raw_log import read_trailer

    try:
        fields, _ = read_trailer(log)
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - _TAIL_BYTES))
            tail = fh.read()
    except OSError as exc:
        return f"its log cannot be read: {exc.strerror or exc}"
    if fields is not None:
        code = fields.get("exit_code")
        how = (
            "timed out"
            if fields.get("timed_out")
            else f"interrupted ({fields['interrupted']})"
            if fields.get("interrupted")
            else f"exit code {code}"
        )
        return f"the command had ended ({how}); the session stopped before the artifact"
    lines = [line.strip() for line in tail.replace(b"\r", b"\n").split(b"\n") if line.strip()]
    if not lines:
        return "its log is empty: the command printed nothing"
    text = lines[-1].decode("utf-8", "replace")
    cut = "..." if len(text) > LAST_LINE_CHARS else ""
    return f"last line: {text[:LAST_LINE_CHARS]!r}{cut}"
