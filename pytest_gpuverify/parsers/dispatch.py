"""Which parser reads which target kind's output (the kinds of :mod:`pytest_gpuverify.config.targets`), and
what the engine and ``gpuverify check`` both hand it, so the two cannot read an output differently."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from pytest_gpuverify.records.artifact import Artifact, TargetRecord
from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, PYTEST, TRITON_PYTEST, Thresholds
from pytest_gpuverify.parsers.dtypes import resolve_dtype
from pytest_gpuverify.parsers.prefilter import drive
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.parsers.throughput import throughput_rows


def context_for(target: Optional[TargetRecord], command: Optional[str], junit_xml: Optional[Path] = None,
                exit_code: Optional[int] = None) -> ParseContext:
    """The parse context of a target as the artifact records it (its dtype, limits and declared words)
    and the command line as run."""
    if target is None:
        return ParseContext(junit_xml=junit_xml, exit_code=exit_code, command=command)
    try:
        limits = limits_of(target)
    except ValidationError:
        limits = Thresholds()  # `gpuverify check` names the bad thresholds itself
    return ParseContext(junit_xml=junit_xml, exit_code=exit_code, dtype=target.dtype, command=command,
                        thresholds=limits, pass_pattern=target.pass_pattern, fail_pattern=target.fail_pattern,
                        min_steps=target.min_steps, verdict_lines_off=tuple(target.verdict_lines_off),
                        exit_status_is_check=target.exit_status_is_check)


def limits_of(target: TargetRecord) -> Thresholds:
    """The limits a target record holds: its thresholds, floors and ceilings (ValidationError if bad)."""
    return Thresholds.model_validate({**target.thresholds, "floors": target.floors, "ceilings": target.ceilings})


def _parser_for(kind: str, context: ParseContext):
    if kind == AITER_OP_TEST:
        from pytest_gpuverify.parsers.aiter import _AiterParser

        return _AiterParser(context)
    if kind == FLYDSL_PYTEST:
        from pytest_gpuverify.parsers.flydsl import FlydslParser

        return FlydslParser(context)
    if kind == TRITON_PYTEST:
        from pytest_gpuverify.parsers.triton import TritonPytestParser

        return TritonPytestParser(context)
    if kind == BENCH:
        from pytest_gpuverify.parsers.bench import _BenchParser

        return _BenchParser(context)
    if kind == PYTEST:
        from pytest_gpuverify.parsers.pytest_run import PytestParser

        return PytestParser(context)
    return None


def warm(kind: str) -> None:
    """Load the parser of ``kind`` and build its triggers for an ASCII output, so that the parse once
    the command is over starts at once (the session calls it in a thread while the command runs).
    Any failure is left to the parse itself, which reports it. The artifact's validator too (its
    build is deferred to first use: records/artifact.py)."""
    try:
        Artifact.model_rebuild()
        parser = _parser_for(kind, ParseContext())
        triggers = getattr(parser, "triggers", None)
        if triggers is not None:
            triggers.candidates(b"warm\n", 0, 5)  # compiles the engine's expressions (hsscan, triggers)
    except Exception:  # noqa: BLE001  # the real parse meets the same problem and names it
        pass


def parse_output(kind: str, path: Path, context: Optional[ParseContext] = None) -> ParsedOutput:
    """Parse ``path`` as the output of a target of ``kind``; ``context`` carries the JUnit XML path of
    an inner pytest run, the declaration's dtype, limits and words, and the command line. Never
    raises: an unknown kind gives an output with a problem and no result."""
    context = context or ParseContext()
    path = Path(path)
    try:
        parser = _parser_for(kind, context)
    except re.error as exc:  # declarations are checked at load time; an artifact edited by hand is not
        return ParsedOutput(parser="none", problems=[f"a declared pattern is not a regular expression: {exc}"])
    if parser is None:
        return ParsedOutput(parser="none", problems=[f"no parser for target kind {kind!r}"])
    if context.pass_pattern or context.fail_pattern:
        parser.triggers = None  # a declared pattern may match any line: every line is read
    parsed = drive(parser, path)
    seen = {row.source_line for row in parsed.perf}
    parsed.perf += [row for row in throughput_rows(path) if row.source_line not in seen]
    found = resolve_dtype(context.dtype, context.command, parsed.dtypes_seen)
    if found is not None:
        parsed.correctness.dtype, parsed.correctness.dtype_source = found
    return parsed
