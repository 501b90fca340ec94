"""The tools' inputs and outputs: their JSON Schemas are what an agent's client sees."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Refusal(_Out):
    """Why a tool did nothing, and what to do instead. A refusal is never a PASS."""

    refused: str = Field(description="what was asked and why it was not done")
    fix: str = Field(description="what to change to be served")


class DoctorResult(_Out):
    ready: bool = Field(description="False when a run here would be refused or INCONCLUSIVE")
    judgement: str = Field(description="the report's last line: READY or NOT READY with the problems")
    problems: list[str]
    remarks: list[str]
    lines: list[str] = Field(description="the report, as `gpuverify doctor` prints it")


class PerfNumber(_Out):
    name: str
    shape: str
    side: str | None = None
    us_median: float | None = None
    stat: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)


class ArtifactSummary(_Out):
    """An artifact's verdict and key numbers, read from the file (never retyped)."""

    path: str
    topic: str
    target: str | None = None
    verdict: Verdict
    reasons: list[str]
    gpus: list[int]
    host: str | None = None
    correctness_passed: bool | None = None
    snr_db: float | None = None
    perf: list[PerfNumber] = Field(default_factory=list, description="the first rows; the artifact holds them all")
    perf_rows: int = 0
    raw_output: str | None = None


class ShowResult(_Out):
    artifact: ArtifactSummary
    text: str = Field(description="the page `gpuverify show` prints")


class CheckResult(_Out):
    ok: bool = Field(description="True only when every artifact re-derives to what it says")
    exit_code: int = Field(description="`gpuverify check`'s exit status: 0 ok, 1 differences, 2 refused")
    mismatches: list[str]
    lines: list[str]


class CompareResult(_Out):
    exit_code: int = Field(description="0: nothing REGRESSED; 1: something REGRESSED; 2: refused")
    comparison: dict[str, Any] | None = Field(None, description="`gpuverify compare --json`'s document")
    message: str | None = Field(None, description="what compare said when it gave no comparison")


class TextResult(_Out):
    exit_code: int
    text: str


class ReportResult(_Out):
    exit_code: int
    path: str | None = Field(None, description="the HTML page, in the ticket folder")
    text: str


class TargetResult(_Out):
    """One target's outcome, as its artifact says."""

    artifact: ArtifactSummary


class VerifyResult(_Out):
    ticket: str
    folder: str = Field(description="the ticket folder the artifacts are in")
    pytest_exit: int | None = Field(description="the session's exit status (1 when a target FAILed)")
    cancelled: bool = False
    targets: list[TargetResult]
    problem: str | None = Field(None, description="why a target gave no artifact, when one did not")
    output_tail: list[str] = Field(default_factory=list, description="the session's last lines")
