"""The one reading of a command's output: its kind's recognizers (:mod:`.registry`) fed every line the
prefilter finds for any of them, in one pass, and what they yield summed up (:mod:`.evidence`).
The engine and ``gpuverify check`` both call :func:`parse_output` with :func:`context_for`, so the
two cannot read an output differently. Reading never raises: a recognizer's bug costs the verdict
(a problem naming the line), never the session.

Summed up last, after every line is settled: the exit status, where the declaration counts it as a
check (``exit_status_is_check``), is one passing check only when nothing failing was printed (a
nonzero exit is a failure of its own, decided with the run: engine/verdict.py), and the script's one
shape only when the output printed none of its own; the output dtype from every source (:mod:`.dtypes`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from pytest_gpuverify.config.targets import BENCH, PYTEST_KINDS, Thresholds
from pytest_gpuverify.parsers.dtypes import resolve_dtype
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.reading.line import clean
from pytest_gpuverify.parsers.reading.prefilter import open_lines
from pytest_gpuverify.parsers.registry import Plan, plan_for
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import Artifact, TargetRecord

EXIT_COUNTED = "exit status 0 counted as one checked shape (the declaration's exit_status_is_check)"
EXIT_ADDED = (
    "exit status 0 counted as a check of the shapes the output printed (the declaration's exit_status_is_check)"
)
EXIT_NOT_COUNTED = "exit status 0 not counted as a check (exit_status_is_check): the output printed a failure"


def context_for(
    target: TargetRecord | None, command: str | None, junit_xml: Path | None = None, exit_code: int | None = None
) -> ParseContext:
    """The parse context of a target as the artifact records it (its dtype, limits and declared words)
    and the command line as run."""
    if target is None:
        return ParseContext(junit_xml=junit_xml, exit_code=exit_code, command=command)
    try:
        limits = limits_of(target)
    except ValidationError:
        limits = Thresholds()  # `gpuverify check` names the bad thresholds itself
    return ParseContext(
        junit_xml=junit_xml,
        exit_code=exit_code,
        dtype=target.dtype,
        command=command,
        thresholds=limits,
        pass_pattern=target.pass_pattern,
        fail_pattern=target.fail_pattern,
        min_steps=target.min_steps,
        verdict_lines_off=tuple(target.verdict_lines_off),
        exit_status_is_check=target.exit_status_is_check,
    )


def limits_of(target: TargetRecord) -> Thresholds:
    """The limits a target record holds: its thresholds, floors and ceilings (ValidationError if bad)."""
    return Thresholds.model_validate({**target.thresholds, "floors": target.floors, "ceilings": target.ceilings})


def warm(kind: str) -> None:
    """Load the recognizers of ``kind`` and build their triggers for an ASCII output, so that the
    reading once the command is over starts at once (the session calls it in a thread while the
    command runs). Any failure is left to the reading itself, which reports it. The artifact's
    validator too (its build is deferred to first use: records/artifact.py)."""
    try:
        Artifact.model_rebuild()
        plan = plan_for(kind)
        if plan is not None:
            plan.triggers.candidates(b"warm\n", 0, 5)  # compiles the expressions (hsscan, fold)
    except Exception:  # noqa: BLE001  # the real reading meets the same problem and names it
        pass


def parse_output(kind: str, path: Path, context: ParseContext | None = None) -> ParsedOutput:
    """Read ``path`` as the output of a target of ``kind``; ``context`` carries the JUnit XML path of
    an inner pytest run, the declaration's dtype, limits and words, and the command line. Never
    raises: an unknown kind gives an output with a problem and no result."""
    context = context or ParseContext()
    plan = plan_for(kind)
    if plan is None:
        return ParsedOutput(parser="none", problems=[f"no parser for target kind {kind!r}"])
    ev = Evidence(plan.parser, context, inside_tests=kind in PYTEST_KINDS)
    try:
        recognizers = [cls(context, ev) for cls in plan.recognizers]
    except re.error as exc:  # declarations are checked at load time; an artifact edited by hand is not
        return ParsedOutput(parser="none", problems=[f"a declared pattern is not a regular expression: {exc}"])
    reader = _read(plan, recognizers, ev, Path(path))
    try:
        for recognizer in recognizers:
            recognizer.close()
        for recognizer in recognizers:
            recognizer.finish()
        ev.close(reader)
        _exit_status(ev, context)
        out = ev.out
        out.correctness = ev.correctness(**ev.known)
        found = resolve_dtype(context.dtype, context.command, out.dtypes_seen)
        if found is not None:
            out.correctness.dtype, out.correctness.dtype_source = found
        return out
    except Exception as exc:  # noqa: BLE001  # a recognizer's bug costs the verdict, never the session
        out = ParsedOutput(parser=plan.parser, lines_read=reader.lines_read, bytes_read=reader.bytes_read)
        out.problems.append(f"parser error while summing up: {type(exc).__name__}: {exc}")
        return out


def _read(plan: Plan, recognizers: list, ev: Evidence, path: Path):
    """Feed every line of ``path`` the prefilter finds (every line while a recognizer wants them all)
    to each recognizer in turn, settling each line once none may still report on it."""
    context = ev.context
    wanting = [r.wants_every_line for r in recognizers if _overrides(r, "wants_every_line")]
    holding = [r.holds_from for r in recognizers if _overrides(r, "holds_from")]
    declared = context.pass_pattern or context.fail_pattern  # a declared pattern may match any line
    reader = open_lines(path, None if declared else plan.triggers, lambda: any(w() for w in wanting))
    if not path.exists():
        ev.problem("raw output file missing")
        return reader
    sides = plan.kind == BENCH
    perf = ev.out.perf
    lineno = 0
    try:
        for lineno, raw in reader:
            line = clean(lineno, raw, sides)
            rows = len(perf)
            for recognizer in recognizers:
                recognizer.feed(line)
            if line.side is not None:
                for row in perf[rows:]:  # a row read on an ``A:``/``[B]`` line is that side's
                    if row.side is None:
                        row.side = line.side
            before = lineno + 1
            for held in holding:
                first = held()
                if first is not None and first < before:
                    before = first
            ev.settle(before)
    except OSError as exc:  # every line before it was read, handed over or not
        ev.problem(f"raw output file unreadable after line {reader.lines_read}: {exc}")
    except Exception as exc:  # noqa: BLE001  # a recognizer's bug must cost the verdict, never the session
        ev.problem(f"parser error at line {lineno}: {type(exc).__name__}: {exc}")
    return reader


def _overrides(recognizer: object, method: str) -> bool:
    from pytest_gpuverify.parsers.registry import RecognizerBase

    return getattr(type(recognizer), method) is not getattr(RecognizerBase, method)


def _exit_status(ev: Evidence, context: ParseContext) -> None:
    """A declared exit-status check adds one passing check, only when nothing failing was printed."""
    if not (context.exit_status_is_check and context.exit_code == 0):
        return
    if ev.failures_seen or ev.failure_words:
        ev.note(EXIT_NOT_COUNTED)
        return
    shape = not ev.inside_tests and not ev.tally.shapes  # the script's one shape, unless it printed its own
    ev.count(passed=1, shapes=int(shape), decisive=not ev.inside_tests)
    ev.note(EXIT_COUNTED if shape else EXIT_ADDED)
