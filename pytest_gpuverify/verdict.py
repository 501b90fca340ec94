"""Verdicts, exactly as the contract's section 6 states them.

FAIL needs printed evidence from a run on the GPU (a failed check, NaN where a number was due, an
``err`` above tolerance, a failing inner test) or a non-zero exit. INCONCLUSIVE is anything that
proves nothing. PASS is a clean run that checked at least one shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .artifact import Verdict
from .parsers.result import ParsedOutput

LOW_PRECISION_DTYPES = ("fp8", "fp4", "mxfp4", "float8", "float4")


@dataclass
class RunFacts:
    """What happened around the command; filled in step by step by the engine."""

    blocked: list[str] = field(default_factory=list)  # reasons the command was never started
    ran: bool = False
    exit_code: Optional[int] = None
    timed_out: bool = False
    interrupted: Optional[str] = None  # "KeyboardInterrupt", "SIGTERM" ...
    container_died: bool = False
    output_problems: list[str] = field(default_factory=list)  # stream errors, truncation
    dtype: Optional[str] = None  # the declared output dtype, when a declaration names one


def needs_snr(dtype: Optional[str]) -> bool:
    return bool(dtype) and any(tag in dtype.lower() for tag in LOW_PRECISION_DTYPES)


def decide(facts: RunFacts, parsed: Optional[ParsedOutput]) -> tuple[Verdict, list[str]]:
    """The verdict and the reasons behind it, most important first."""
    if facts.blocked or not facts.ran:
        return "INCONCLUSIVE", list(facts.blocked) or ["the command never ran"]

    failures: list[str] = []
    doubts: list[str] = []
    if parsed is not None:
        failures.extend(parsed.failures)
        doubts.extend(parsed.problems)
    if facts.timed_out:
        doubts.insert(0, "timeout: the command ran past --gpu-timeout and was stopped")
    elif facts.interrupted:
        doubts.insert(0, f"interrupted ({facts.interrupted}): the command was stopped")
    elif facts.container_died:
        doubts.insert(0, "the container stopped during the run")
    elif facts.exit_code is None:
        doubts.insert(0, "the command's exit code could not be read")
    elif facts.exit_code != 0:
        failures.insert(0, f"exit code {facts.exit_code}")
    doubts.extend(facts.output_problems)

    correctness = parsed.correctness if parsed is not None else None
    if failures:
        return "FAIL", failures + doubts
    if correctness is None or correctness.passed is None:
        doubts.append("no readable correctness result in the output")
    elif correctness.shapes_checked < 1:
        doubts.append("the output checked no shape")
    if needs_snr(facts.dtype) and (correctness is None or correctness.snr_db is None):
        doubts.append(f"{facts.dtype} output without an SNR")
    if doubts:
        return "INCONCLUSIVE", doubts
    return "PASS", []
