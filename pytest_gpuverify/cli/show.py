"""``gpuverify show``: an artifact as a readable page (what ran, where, verdict and why, perf)."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.parsers.perfstats import printed_us
from pytest_gpuverify.records.artifact import Artifact


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render(art: Artifact, path: Path) -> str:
    gpu = art.gpu
    lines = [
        f"{art.verdict}  {art.target.name if art.target else art.topic}  ({path})",
        f"  ticket     {_fmt(art.key)}   ran {art.ts} for {_fmt(art.duration_s)} s",
        f"  host       {_fmt(art.host)}   container {_fmt(art.container)}   image {_fmt(art.image)}",
        f"  gpu        index {_fmt(gpu.index)}  arch {_fmt(gpu.arch)}  {_fmt(gpu.name)}  lock {_fmt(gpu.lock_path)}",
        f"  versions   torch {_fmt(art.versions.torch)}  hip {_fmt(art.versions.hip)}"
        f"  triton {_fmt(art.versions.triton)}  rocm {_fmt(art.versions.rocm)}",
        f"  command    {_fmt(art.command)}   (in {_fmt(art.workdir)}, exit {_fmt(art.exit_code)})",
    ]
    if art.run is not None:
        r = art.run
        lines.append(
            f"  run        ran {_fmt(r.ran)}  exit {_fmt(r.exit_code)}  timed out {_fmt(r.timed_out)}  "
            f"interrupted {_fmt(r.interrupted)}  container died {_fmt(r.container_died)}  output parsed {_fmt(r.output_parsed)}"
        )
    for repo in art.repos:
        lines.append(f"  repo       {repo.path} @ {_fmt(repo.sha)[:12]}{' (dirty)' if repo.dirty else ''}")
    for pkg, origin in art.imports.items():
        record = art.import_origins.get(pkg)
        how = (
            ""
            if record is None
            else " (imported by the run)"
            if record.seen == "imported"
            else " (not imported by the run)"
            if record.seen == "not imported"
            else " (predicted: the run recorded none)"
        )
        lines.append(f"  imports    {pkg} from {_fmt(origin)}{how}")
    c = art.correctness
    lines.append(
        f"  correct    passed {_fmt(c.passed)}  shapes {c.shapes_checked}  checks {c.checks_passed} passed, "
        f"{c.checks_warning} warning, {c.checks_failed} failed  nan {c.nan_count}  atol {_fmt(c.atol)} rtol {_fmt(c.rtol)}"
        f"  snr {_fmt(c.snr_db)}"
    )
    unknowns = set(art.run.unknowns) if art.run is not None else set()
    for reason in art.reasons:  # what the verdict stands on; a fact recorded as null is a note, not a why
        lines.append(f"  {'note' if reason in unknowns else 'why':<10} {reason}")
    if art.perf:
        shown = art.perf[:200]
        width = min(60, max(len(r.shape) for r in shown))
        lines.append("")
        lines.append(f"  {'shape':<{width}}  {'name':<20} {'us':>12}  stat    metrics")
        for row in shown:
            metrics = " ".join(f"{k}={_fmt(v)}" for k, v in row.metrics.items())
            lines.append(
                f"  {row.shape[:width]:<{width}}  {row.name[:20]:<20} {_fmt(printed_us(row)):>12}  {_fmt(row.stat):<7} {metrics}"
            )
        if len(art.perf) > len(shown):
            lines.append(f"  ... {len(art.perf) - len(shown)} more rows in the artifact")
        if art.verdict != "PASS":
            lines.append("  (perf rows next to a result that is not PASS are kept, never reported as results)")
    lines.append(f"  raw output {_fmt(art.raw_output)}  sha256 {_fmt(art.raw_output_sha256)}")
    return "\n".join(lines)
