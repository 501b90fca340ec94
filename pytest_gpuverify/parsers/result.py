"""What the reader reads out of a command's output: the boundary between the parsers and the verdict."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.config.targets import Thresholds
from pytest_gpuverify.records.artifact import AutotuneChoice, Correctness, PerfRow


class CheckLine(BaseModel):
    """One correctness check the output printed (an aiter ``[checkAllclose ...]`` line and kin)."""

    model_config = ConfigDict(defer_build=True)

    line: int  # 1-based line number in the raw output
    status: str  # "passed" | "warning" | "failed" | "catastrophic"
    atol: float | None = None
    rtol: float | None = None
    label: str = ""  # the msg printed in front of the check, ANSI stripped, trimmed


class ParseContext(BaseModel):
    """What a parser may know besides the raw output: files the run produced, and the declaration."""

    model_config = ConfigDict(defer_build=True)

    junit_xml: Path | None = None  # an inner pytest run's JUnit report, fetched out of the container
    junit_problem: str | None = None  # why there is none (not written, could not be fetched)
    exit_code: int | None = None
    dtype: str | None = None  # the declared output dtype
    command: str | None = None  # the command line as run (its -d/--dtype arguments name a dtype)
    thresholds: Thresholds = Field(default_factory=Thresholds)  # declared limits, applied per printed shape
    pass_pattern: str | None = None  # declared regular expressions (checked when declared)
    fail_pattern: str | None = None
    verdict_lines_off: tuple[str, ...] = ()  # statement families turned off (reading/statements.py)
    exit_status_is_check: bool = False  # exit 0 is one checked shape (an assert-only script)
    min_steps: int | None = None  # the fewest steps each run must print that it timed (runs_log.py)


class ParsedOutput(BaseModel):
    """Everything the verdict needs from the output, and nothing it would have to re-read.

    ``failures`` are printed evidence of incorrect results (each a short reason naming the line);
    ``problems`` are reasons the output cannot prove anything (truncated table, unreadable value);
    ``notes`` are harmless observations kept for the reader.
    """

    model_config = ConfigDict(defer_build=True)

    parser: str
    correctness: Correctness = Field(default_factory=Correctness)
    perf: list[PerfRow] = Field(default_factory=list)
    checks: list[CheckLine] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    lines_read: int = 0
    bytes_read: int = 0
    # output dtypes printed for the shapes checked: (dtype, where), the first few and every low-precision one
    dtypes_seen: list[tuple[str, str]] = Field(default_factory=list)
    # an inner pytest that ran no test case (its exit status then says nothing about the kernel): the
    # first error line it printed ("" when none); None when tests ran or the output is no pytest run's
    ran_no_test: str | None = None
    # Triton's autotuner's choices as printed (TRITON_PRINT_AUTOTUNING): never checks, never perf rows
    autotune: list[AutotuneChoice] = Field(default_factory=list)


REASON_CAP = 200  # failures/problems listed one by one; the rest are counted in a closing line
NOTE_CAP = 50
PERF_ROW_CAP = 20_000  # about 1.7 KB each: keeps a huge table's rows under ~35 MB
