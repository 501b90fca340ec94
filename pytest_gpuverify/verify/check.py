"""``gpuverify check``: re-derive an artifact's numbers and verdict from its raw output and name any difference.

Anyone can re-check an artifact without trusting whoever wrote it: the raw output's sha256 must
match, re-parsing it with the same parser must give the same perf rows and correctness, and the
verdict and its reasons must follow from the re-parsed output and the run record (``run``), through
the same function the engine used. Artifacts of schema 1, written before the run record was kept,
get the older, partial verdict checks. The artifact must hold every field of the schema it claims
(:mod:`.schemas`), and its provenance must agree with itself and the raw log's trailer
(:mod:`.check_provenance`): its ticket with its folder, its times with each other and the log
(:mod:`.check_times`). With ``--allowed-signers`` each file's signature is verified too
(:mod:`.signing`): only that proves who wrote the files; the rest proves they agree.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from pytest_gpuverify.engine.runs_log import parse_log, runs_problems
from pytest_gpuverify.engine.signing import signer_of, verify
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.parsers.reader import context_for, limits_of
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.place.builds import build_problems
from pytest_gpuverify.records.artifact import Artifact, Correctness, RunRecord, sha256_file
from pytest_gpuverify.verify.provenance import provenance_problems
from pytest_gpuverify.verify.traces import profile_problems


def signature_problems(art: Artifact | None, artifact_path: Path, allowed: Path) -> list[str]:
    """Each file's signature, as ``art.signed_by``; an artifact that cannot be read is verified as
    whoever the allowed-signers file says made its signature."""
    if not allowed.is_file():
        return [f"--allowed-signers {allowed}: no such file"]
    if art is None:
        identity = signer_of(artifact_path, allowed)
        if identity is None:
            return [f"{artifact_path.name}: no signature by anyone in {allowed}"]
        return [why for why in [verify(artifact_path, allowed, identity)] if why]
    if not art.signed_by:
        return ["signed_by is null: the artifact was not signed"]
    # each repeated run's report too, and each trace or profile
    names = (art.raw_output, art.junit_xml, *(r.junit_xml for r in art.runs), *(p.path for p in art.profiles))
    files = [artifact_path] + [artifact_path.parent / name for name in names if name]
    return [why for why in (verify(f, allowed, art.signed_by) for f in files) if why]


def check_artifact(art: Artifact, artifact_path: Path, gathered: bool = False) -> list[str]:
    """Every difference between the artifact and what its raw output and run record give. ``gathered``:
    a copy read where it is gathered from (merge's sources), whose folder is not its ticket's."""
    problems: list[str] = []
    parsed: ParsedOutput | None = None
    raw = None
    if art.raw_output:
        raw = Path(art.raw_output)
        raw = raw if raw.is_absolute() else artifact_path.parent / raw
        if not raw.exists():
            return [f"raw output {raw} is missing"]
        digest = sha256_file(raw)
        if digest != art.raw_output_sha256:
            problems.append(f"raw output sha256 is {digest}, the artifact says {art.raw_output_sha256}")
        if art.raw_output_bytes is not None and raw.stat().st_size != art.raw_output_bytes:
            problems.append(f"raw output is {raw.stat().st_size} bytes, the artifact says {art.raw_output_bytes}")
        # the engine reads no output after an interrupt: then the artifact may claim nothing from it
        if art.run is None or art.run.output_parsed:
            parsed = _parse(art, artifact_path, raw)
    elif art.run is not None and art.run.output_parsed:
        problems.append("run.output_parsed is true, but there is no raw output")
    problems += (
        _compare_output(art, parsed) + provenance_problems(art, artifact_path, raw, gathered) + runs_problems(art, raw)
    )
    problems += build_problems(art, artifact_path.parent)
    problems += profile_problems(art, artifact_path.parent, parsed)
    if art.run is None:
        return problems + _loose_verdict(art, parsed)
    return problems + _rederive_verdict(art, art.run, parsed)


def _parse(art: Artifact, artifact_path: Path, raw: Path) -> ParsedOutput:
    kind = art.target.kind if art.target else "aiter-op-test"
    junit = artifact_path.parent / art.junit_xml if art.junit_xml else None
    exit_code = art.run.exit_code if art.run is not None else art.exit_code  # what the engine parsed with
    return parse_log(kind, raw, context_for(art.target, art.command, junit, exit_code))


def _compare_output(art: Artifact, parsed: ParsedOutput | None) -> list[str]:
    """Perf rows and correctness as the raw output gives them; none at all when it was not read."""
    if parsed is None:
        problems = [f"{len(art.perf)} perf rows, but no output was read"] if art.perf else []
        unread = Correctness().model_dump()
        return problems + [
            f"correctness.{key} is {value!r}, but no output was read"
            for key, value in art.correctness.model_dump().items()
            if unread[key] != value
        ]
    problems = []
    # a row's ``table`` (its table's title) is part of its key from schema 5; older artifacts hold none
    not_compared = {"regime"} if art.schema_version >= 5 else {"regime", "table"}
    ours = [r.model_dump(exclude=not_compared) for r in parsed.perf]
    theirs = [r.model_dump(exclude=not_compared) for r in art.perf]
    if len(ours) != len(theirs):
        problems.append(f"perf has {len(theirs)} rows, the raw output gives {len(ours)}")
    for i, (a, b) in enumerate(zip(theirs, ours)):
        for key in a:
            if a[key] != b[key]:
                problems.append(
                    f"perf row {i} ({b['shape']} {b['name']}): {key} is {a[key]!r}, the raw output gives {b[key]!r}"
                )
    mine = parsed.correctness.model_dump()
    for key, value in art.correctness.model_dump().items():
        if mine.get(key) != value:
            problems.append(f"correctness.{key} is {value!r}, the raw output gives {mine.get(key)!r}")
    return problems


def _rederive_verdict(art: Artifact, run: RunRecord, parsed: ParsedOutput | None) -> list[str]:
    problems = []
    # the artifact's top-level copies must say what the record says
    if run.exit_code != art.exit_code:
        problems.append(f"exit_code is {art.exit_code!r}, run.exit_code is {run.exit_code!r}")
    if run.timed_out != art.timed_out:
        problems.append(f"timed_out is {art.timed_out}, run.timed_out is {run.timed_out}")
    if run.ran != bool(art.raw_output):
        problems.append(f"run.ran is {run.ran}, but the artifact has {'a' if art.raw_output else 'no'} raw output")
    try:
        limits = limits_of(art.target) if art.target else None
    except ValidationError as exc:
        return problems + [f"target.thresholds are not valid: {exc.errors()[0]['msg']}"]
    verdict, reasons = verdict_and_reasons(run, parsed, limits, art.target)
    if verdict == "PASS" and art.verdict != "PASS":
        problems.append(f"verdict is {art.verdict}, re-derived PASS")  # a PASS's reasons are only unknowns
    elif verdict != art.verdict:
        never_ran = "the command never ran: " if run.blocked and not run.ran else ""
        problems.append(f"verdict is {art.verdict}, re-derived {verdict}: {never_ran}{'; '.join(reasons[:3])}")
    missing = [f"reason missing: {r}" for r in reasons if r not in art.reasons]
    extra = [f"reason extra: {r}" for r in art.reasons if r not in reasons]
    if not (missing or extra) and art.reasons != reasons:
        extra.append("reasons: the re-derived ones, in another order or repeated")
    return problems + missing + extra


def _loose_verdict(art: Artifact, parsed: ParsedOutput | None) -> list[str]:
    """An old artifact: without its run facts the verdict can only be checked against the output."""
    if not art.raw_output:
        problems = []
        if art.verdict != "INCONCLUSIVE":
            problems.append(f"verdict {art.verdict}, but the command never ran (no raw output)")
        if art.exit_code is not None:
            problems.append("an exit code, but the command never ran")
        return problems
    assert parsed is not None
    if art.verdict == "PASS" and (parsed.failures or parsed.correctness.passed is not True):
        return ["verdict PASS, but the raw output does not pass"]
    if art.verdict == "FAIL" and not (parsed.failures or (art.exit_code not in (0, None))):
        return ["verdict FAIL, but the raw output shows no failure and the exit code was 0"]
    return []
