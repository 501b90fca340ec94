"""``gpuverify check``: re-derive an artifact's numbers from its raw output and name any difference.

Anyone can re-check an artifact without trusting whoever wrote it: the raw output's sha256 must
match, and re-parsing it with the same parser must give the same perf rows, correctness and verdict.
"""

from __future__ import annotations

from pathlib import Path

from .artifact import Artifact, sha256_file
from .parsers.dispatch import parse_output
from .parsers.result import ParseContext


def check_artifact(art: Artifact, artifact_path: Path) -> list[str]:
    if not art.raw_output:
        # the command never ran (NO_GPU, wrong arch, ...): nothing may claim it did
        problems = []
        if art.verdict != "INCONCLUSIVE":
            problems.append(f"verdict {art.verdict}, but the command never ran (no raw output)")
        if art.perf or art.exit_code is not None or art.correctness.passed is not None:
            problems.append("perf rows, an exit code or a correctness result, but the command never ran")
        return problems
    raw = (artifact_path.parent / art.raw_output) if not Path(art.raw_output).is_absolute() else Path(art.raw_output)
    if not raw.exists():
        return [f"raw output {raw} is missing"]
    problems = []
    digest = sha256_file(raw)
    if digest != art.raw_output_sha256:
        problems.append(f"raw output sha256 is {digest}, the artifact says {art.raw_output_sha256}")
    kind = art.target.kind if art.target else "aiter-op-test"
    junit = artifact_path.parent / art.junit_xml if art.junit_xml else None
    context = ParseContext(junit_xml=junit, exit_code=art.exit_code, dtype=art.target.dtype if art.target else None)
    parsed = parse_output(kind, raw, context)
    ours = [r.model_dump(exclude={"regime"}) for r in parsed.perf]
    theirs = [r.model_dump(exclude={"regime"}) for r in art.perf]
    if len(ours) != len(theirs):
        problems.append(f"perf has {len(theirs)} rows, the raw output gives {len(ours)}")
    for i, (a, b) in enumerate(zip(theirs, ours)):
        for key in a:
            if a[key] != b[key]:
                problems.append(f"perf row {i} ({b['shape']} {b['name']}): {key} is {a[key]!r}, the raw output gives {b[key]!r}")
    mine = parsed.correctness.model_dump()
    for key, value in art.correctness.model_dump().items():
        if mine.get(key) != value:
            problems.append(f"correctness.{key} is {value!r}, the raw output gives {mine.get(key)!r}")
    if art.verdict == "PASS" and (parsed.failures or parsed.correctness.passed is not True):
        problems.append("verdict PASS, but the raw output does not pass")
    if art.verdict == "FAIL" and not (parsed.failures or (art.exit_code not in (0, None))):
        problems.append("verdict FAIL, but the raw output shows no failure and the exit code was 0")
    return problems
