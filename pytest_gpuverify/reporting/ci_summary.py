"""GitHub Actions job summary (markdown) and ``::error``/``::warning`` annotations, from the
verdict properties every GPU target's report carries (so it covers xdist workers' targets too).
No pytest here: ``verdicts`` is a list of ``(nodeid, properties)``.
(No ``from __future__ import annotations``: :func:`annotations` below would shadow that name.)"""

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from pytest_gpuverify.common import markdown as md

SUMMARY_LIMIT = 1024 * 1024  # GitHub refuses a step summary over 1 MiB
MAX_ANNOTATIONS = 10  # GitHub shows at most 10 of each level per step
_ORDER = {"FAIL": 0, "INCONCLUSIVE": 1, "NO_GPU": 2}
_COLUMNS = ("Verdict", "Target", "GPU", "Host", "Key numbers", "First reason", "Artifact")


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _cell(text: object) -> str:
    """Free text in a cell (a reason a kernel's output may have written), inert."""
    return md.text(text) or "-"


def key_numbers(props: dict) -> str:
    parts = []
    if props.get("gpuverify_shapes") not in (None, "", "0"):
        from pytest_gpuverify.common.words import counted

        parts.append(counted(props["gpuverify_shapes"], "shape"))
    for name, label in (("gpuverify_snr_db", "SNR {} dB"), ("gpuverify_cosine", "cos {}")):
        if props.get(name):
            parts.append(label.format(props[name]))
    perf = [v for k, v in sorted(props.items()) if k.startswith("gpuverify_perf_")]
    parts += perf[:3] + ([f"+{len(perf) - 3} perf rows"] if len(perf) > 3 else [])
    return "; ".join(parts)


def _row(nodeid: str, p: dict) -> str:
    cells = (
        f"**{_cell(p.get('gpuverify_verdict', '?'))}**",
        md.code(nodeid) or "-",
        _cell(p.get("gpuverify_gpus", "-")),
        _cell(p.get("gpuverify_host", "-")),
        _cell(key_numbers(p)),
        _cell(p.get("gpuverify_reason", "")),
        md.code(p.get("gpuverify_artifact", "")) or "-",
    )
    return "| " + " | ".join(cells) + " |"


def ordered(verdicts: Iterable[tuple[str, dict]]) -> list[tuple[str, dict]]:
    return sorted(verdicts, key=lambda v: _ORDER.get(v[1].get("gpuverify_verdict", ""), 9))


def markdown(verdicts: Iterable[tuple[str, dict]], limit: int = SUMMARY_LIMIT) -> str:
    """FAIL and INCONCLUSIVE rows first, in a table; the rest inside ``<details>``; cut under ``limit``."""
    rows = ordered(verdicts)
    counts: dict[str, int] = {}
    for _, p in rows:
        counts[p.get("gpuverify_verdict", "?")] = counts.get(p.get("gpuverify_verdict", "?"), 0) + 1
    head = ["## gpuverify", "", ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no GPU targets ran", ""]
    table = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    bad = [r for r in rows if r[1].get("gpuverify_verdict") != "PASS"]
    good = [r for r in rows if r[1].get("gpuverify_verdict") == "PASS"]
    parts = list(head)
    if bad:
        parts += [*table, *(_row(*r) for r in bad), ""]
    if good:
        parts += [
            f"<details><summary>{len(good)} PASS</summary>",
            "",
            *table,
            *(_row(*r) for r in good),
            "",
            "</details>",
            "",
        ]
    text = "\n".join(parts) + "\n"
    if len(text.encode()) <= limit:
        return text
    return _cut(parts, limit)


def _cut(parts: list[str], limit: int) -> str:
    note = "\n\n**gpuverify: summary cut at GitHub's 1 MiB limit; {} lines left out. See the artifacts.**\n"
    budget = limit - len(note.encode()) - 64
    kept, size = [], 0
    for line in parts:
        size += len(line.encode()) + 1
        if size > budget:
            break
        kept.append(line)
    closing = ["</details>"] if any(line.startswith("<details>") for line in kept) and "</details>" not in kept else []
    return "\n".join(kept + closing) + note.format(len(parts) - len(kept))


def annotation(level: str, nodeid: str, p: dict) -> str:
    """One ``::error``/``::warning`` line at the target's file."""
    props = []
    if p.get("gpuverify_file"):
        props.append(f"file={escape_property(p['gpuverify_file'])}")
        props.append(f"line={p.get('gpuverify_line') or 1}")
    props.append(f"title={escape_property('gpuverify ' + p.get('gpuverify_verdict', '') + ' ' + nodeid)}")
    msg = f"{p.get('gpuverify_verdict')}: {p.get('gpuverify_reason', '')} (artifact {p.get('gpuverify_artifact', '')})"
    return f"::{level} {','.join(props)}::{escape_data(msg)}"


_LEVELS = (("error", {"FAIL"}), ("warning", {"INCONCLUSIVE", "NO_GPU"}))


def level_of(verdict: str) -> str | None:
    return next((level for level, wanted in _LEVELS if verdict in wanted), None)


def more_line(level: str, count: int) -> str:
    return f"::{level}::{escape_data(f'gpuverify: {count} more, see the job summary')}"


def annotations(verdicts: Iterable[tuple[str, dict]]) -> list[str]:
    """``::error`` for FAIL, ``::warning`` for INCONCLUSIVE/NO_GPU, at the target's file; 10 of each at most."""
    verdicts = list(verdicts)
    out: list[str] = []
    for level, wanted in _LEVELS:
        hits = [(n, p) for n, p in verdicts if p.get("gpuverify_verdict") in wanted]
        out += [annotation(level, nodeid, p) for nodeid, p in hits[:MAX_ANNOTATIONS]]
        if len(hits) > MAX_ANNOTATIONS:
            out.append(more_line(level, len(hits) - MAX_ANNOTATIONS))
    return out


class CiPublisher:
    """The session's CI lines, published as each target ends and once more at the session's end: the
    markdown (``--gpu-ci-summary``, and under GitHub Actions this session's own part of
    $GITHUB_STEP_SUMMARY, rewritten in place so that it is never there twice) holds every target so
    far; each annotation is printed once, as its target ends, 10 of each level at most."""

    def __init__(
        self, summary_path: str | None = None, environ: dict | None = None, stream: TextIO | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        self.summary_path = summary_path
        self.github = env.get("GITHUB_ACTIONS") == "true"
        self.step_summary = env.get("GITHUB_STEP_SUMMARY") if self.github else None
        self.stream = stream
        self._step_offset: int | None = None  # where this session's part of the step summary begins
        self._annotated: set[str] = set()
        self._shown = {level: 0 for level, _ in _LEVELS}
        self._problems: list[str] = []
        self._ended = False  # the session's end was published

    def update(self, verdicts: list[tuple[str, dict]], final: bool = False) -> list[str]:
        """Write the markdown of ``verdicts`` (every target so far) and print the annotations of those not
        printed yet; ``final``: the session's end (the count of annotations left out). Returns new problems."""
        before = len(self._problems)
        text = markdown(verdicts)
        if self.summary_path:
            self._write(Path(self.summary_path), text, 0)
        if self.step_summary:
            self._write_step(Path(self.step_summary), text)
        if self.github:
            stream = self.stream or sys.stderr
            for nodeid, p in verdicts:
                level = level_of(p.get("gpuverify_verdict", ""))
                if level is None or nodeid in self._annotated:
                    continue
                self._annotated.add(nodeid)
                self._shown[level] += 1
                if self._shown[level] <= MAX_ANNOTATIONS:
                    print(annotation(level, nodeid, p), file=stream, flush=True)
            if final and not self._ended:
                self._ended = True
                for level, count in self._shown.items():
                    if count > MAX_ANNOTATIONS:
                        print(more_line(level, count - MAX_ANNOTATIONS), file=stream, flush=True)
        return self._problems[before:]

    def _write_step(self, path: Path, text: str) -> None:
        if self._step_offset is None:
            try:
                self._step_offset = path.stat().st_size  # what earlier steps' commands wrote stays
            except FileNotFoundError:
                self._step_offset = 0
            except OSError as exc:
                self._say(path, exc)
                return
        self._write(path, text, self._step_offset)

    def _write(self, path: Path, text: str, offset: int) -> None:
        """``text`` from ``offset`` on, the file cut there first (this session's earlier version of it)."""
        try:
            with open(path, "r+b" if offset and path.exists() else "wb") as fh:
                fh.seek(offset)
                fh.truncate()
                fh.write(text.encode("utf-8"))
        except OSError as exc:
            self._say(path, exc)

    def _say(self, path: Path, exc: OSError) -> None:
        line = f"CI summary not written to {path}: {exc}"
        if line not in self._problems:
            self._problems.append(line)


def publish(
    verdicts: list[tuple[str, dict]],
    *,
    summary_path: str | None = None,
    environ: dict | None = None,
    stream: TextIO = sys.stderr,
) -> list[str]:
    """Writes the markdown to ``summary_path`` (--gpu-ci-summary) and, under GitHub Actions, appends it to
    $GITHUB_STEP_SUMMARY and prints the annotations. Returns problems (a path that could not be written)."""
    return CiPublisher(summary_path, environ, stream).update(verdicts, final=True)
