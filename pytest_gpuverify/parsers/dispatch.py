"""Which parser reads which target kind's output (the kinds of :mod:`pytest_gpuverify.targets`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..targets import AITER_OP_TEST, BENCH, FLYDSL_PYTEST, TRITON_PYTEST
from .result import ParseContext, ParsedOutput


def parse_output(kind: str, path: Path, context: Optional[ParseContext] = None) -> ParsedOutput:
    """Parse ``path`` as the output of a target of ``kind``; ``context`` carries the JUnit XML path of
    an inner pytest run. Never raises: an unknown kind gives an output with a problem and no result."""
    if kind == AITER_OP_TEST:
        from .aiter import parse_aiter_output

        return parse_aiter_output(path)
    if kind == FLYDSL_PYTEST:
        from .flydsl import parse_flydsl_output

        return parse_flydsl_output(path, context)
    if kind == TRITON_PYTEST:
        from .triton import parse_triton_pytest_output

        return parse_triton_pytest_output(path, context)
    if kind == BENCH:
        from .bench import parse_bench_output

        return parse_bench_output(path, context)
    return ParsedOutput(parser="none", problems=[f"no parser for target kind {kind!r}"])
