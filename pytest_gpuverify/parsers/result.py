"""What a parser reads out of a command's output: the boundary between parsers and the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import BaseModel, Field

from ..artifact import Correctness, PerfRow


class CheckLine(BaseModel):
    """One correctness check the output printed (an aiter ``[checkAllclose ...]`` line and kin)."""

    line: int  # 1-based line number in the raw output
    status: str  # "passed" | "warning" | "failed" | "catastrophic"
    atol: Optional[float] = None
    rtol: Optional[float] = None
    label: str = ""  # the msg printed in front of the check, ANSI stripped, trimmed


class ParseContext(BaseModel):
    """What a parser may know besides the raw output: files the run produced, and the declaration."""

    junit_xml: Optional[Path] = None  # an inner pytest run's JUnit report, fetched out of the container
    junit_problem: Optional[str] = None  # why there is none (not written, could not be fetched)
    exit_code: Optional[int] = None
    dtype: Optional[str] = None


class ParsedOutput(BaseModel):
    """Everything the verdict needs from the output, and nothing it would have to re-read.

    ``failures`` are printed evidence of incorrect results (each a short reason naming the line);
    ``problems`` are reasons the output cannot prove anything (truncated table, unreadable value);
    ``notes`` are harmless observations kept for the reader.
    """

    parser: str
    correctness: Correctness = Field(default_factory=Correctness)
    perf: list[PerfRow] = Field(default_factory=list)
    checks: list[CheckLine] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    lines_read: int = 0
    bytes_read: int = 0
