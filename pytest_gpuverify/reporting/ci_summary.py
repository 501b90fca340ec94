"""GitHub Actions job summary (markdown) and ``::error``/``::warning`` annotations, from the
verdict properties every GPU target's report carries (so it covers xdist workers' targets too).
No pytest here: ``verdicts`` is a list of ``(nodeid, properties)``.
(No ``from __future__ import annotations``: :func:`annotations` below would shadow that name.)"""

import os
import sys
from pathlib import Path
from typing import Iterable, Optional, TextIO

SUMMARY_LIMIT = 1024 * 1024  # GitHub refuses a step summary over 1 MiB
MAX_ANNOTATIONS = 10  # GitHub shows at most 10 of each level per step
_ORDER = {"FAIL": 0, "INCONCLUSIVE": 1, "NO_GPU": 2}
_COLUMNS = ("Verdict", "Target", "GPU", "Host", "Key numbers", "First reason", "Artifact")


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ") or "-"


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
    cells = (f"**{p.get('gpuverify_verdict', '?')}**", f"`{nodeid}`", p.get("gpuverify_gpus", "-"),
             p.get("gpuverify_host", "-"), key_numbers(p), p.get("gpuverify_reason", ""),
             f"`{p.get('gpuverify_artifact', '')}`")
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


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
        parts += [f"<details><summary>{len(good)} PASS</summary>", "", *table, *(_row(*r) for r in good), "",
                  "</details>", ""]
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


def annotations(verdicts: Iterable[tuple[str, dict]]) -> list[str]:
    """``::error`` for FAIL, ``::warning`` for INCONCLUSIVE/NO_GPU, at the target's file; 10 of each at most."""
    out: list[str] = []
    for level, wanted in (("error", {"FAIL"}), ("warning", {"INCONCLUSIVE", "NO_GPU"})):
        hits = [(n, p) for n, p in verdicts if p.get("gpuverify_verdict") in wanted]
        for nodeid, p in hits[:MAX_ANNOTATIONS]:
            props = []
            if p.get("gpuverify_file"):
                props.append(f"file={escape_property(p['gpuverify_file'])}")
                props.append(f"line={p.get('gpuverify_line') or 1}")
            props.append(f"title={escape_property('gpuverify ' + p.get('gpuverify_verdict', '') + ' ' + nodeid)}")
            msg = f"{p.get('gpuverify_verdict')}: {p.get('gpuverify_reason', '')} (artifact {p.get('gpuverify_artifact', '')})"
            out.append(f"::{level} {','.join(props)}::{escape_data(msg)}")
        if len(hits) > MAX_ANNOTATIONS:
            out.append(f"::{level}::{escape_data(f'gpuverify: {len(hits) - MAX_ANNOTATIONS} more, see the job summary')}")
    return out


def publish(verdicts: list[tuple[str, dict]], *, summary_path: Optional[str] = None,
            environ: Optional[dict] = None, stream: TextIO = sys.stderr) -> list[str]:
    """Writes the markdown to ``summary_path`` (--gpu-ci-summary) and, under GitHub Actions, appends it to
    $GITHUB_STEP_SUMMARY and prints the annotations. Returns problems (a path that could not be written)."""
    env = os.environ if environ is None else environ
    problems = []
    text = markdown(verdicts)
    targets = [(summary_path, "w")] if summary_path else []
    github = env.get("GITHUB_ACTIONS") == "true"
    if github and env.get("GITHUB_STEP_SUMMARY"):
        targets.append((env["GITHUB_STEP_SUMMARY"], "a"))
    for path, mode in targets:
        try:
            with open(Path(path), mode, encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            problems.append(f"CI summary not written to {path}: {exc}")
    if github:
        for line in annotations(verdicts):
            print(line, file=stream, flush=True)
    return problems
