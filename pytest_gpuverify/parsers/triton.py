"""Parser for aiter's Triton kernel tests, ``op_tests/triton_tests/**``.

They are pytest files that print essentially nothing on success; a failure is a failing test, with
torch ``assert_close``'s ``Tensor-likes are not close!`` block (read by :mod:`.pytest_run`). Some
attention tests print ``Cosine Similarity: x`` (test_fav3_sage), read by :mod:`.metrics`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pytest_gpuverify.parsers.pytest_run import PytestParser, drive
from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput


class TritonPytestParser(PytestParser):
    name = "triton"


def parse_triton_pytest_output(path: Path, context: Optional[ParseContext] = None) -> ParsedOutput:
    """Read an aiter Triton pytest run's saved stdout+stderr (and its JUnit XML); never raises."""
    return drive(TritonPytestParser(context), path)
