"""The quick verbs (doctor, show, check, compare, history show, handoff, report): each calls the function
the ``gpuverify`` command calls, with arguments built from names the server checked (places.py), and
returns what it said as a typed result. Nothing here re-decides a verdict or a comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_gpuverify.cli.agents.models import (
    ArtifactSummary,
    CheckResult,
    CompareResult,
    DoctorResult,
    PerfNumber,
    ReportResult,
    ShowResult,
    TextResult,
)
from pytest_gpuverify.cli.agents.places import Places, Refused
from pytest_gpuverify.records.artifact import Artifact, read_artifact

PERF_SHOWN = 50
COMMAND_TIMEOUT_S = 600.0  # a compare --confirm or a report of a long history; never a hung server


def gpuverify(*argv: str) -> tuple[int, str, str]:
    """The ``gpuverify`` command itself, run as a process: its exit status, stdout and stderr (the server's
    own stdout is the protocol's, never a command's; a command's crash stays in its process)."""
    try:
        res = subprocess.run(
            [sys.executable, "-m", "pytest_gpuverify.cli.main", *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=COMMAND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return 2, "", f"gpuverify {argv[0]} gave no answer within {COMMAND_TIMEOUT_S:g} s"
    return res.returncode, res.stdout, res.stderr


def summary(art: Artifact, path: Path) -> ArtifactSummary:
    c = art.correctness
    return ArtifactSummary(
        path=str(path),
        topic=art.topic,
        target=art.target.name if art.target else None,
        verdict=art.verdict,
        reasons=list(art.reasons),
        gpus=[g.index for g in art.gpus] or ([art.gpu.index] if art.gpu.index is not None else []),
        host=art.host,
        correctness_passed=c.passed,
        snr_db=c.snr_db,
        perf=[
            PerfNumber(name=r.name, shape=r.shape, side=r.side, us_median=r.us_median, stat=r.stat, metrics=r.metrics)
            for r in art.perf[:PERF_SHOWN]
        ],
        perf_rows=len(art.perf),
        raw_output=art.raw_output,
    )


def doctor(places: Places, host: str | None) -> DoctorResult:
    from pytest_gpuverify.cli.doctor import run_doctor

    report = run_doctor(places.env, host_name=host)
    return DoctorResult(
        ready=report.exit_code == 0,
        judgement=report.judgement(),
        problems=report.problems,
        remarks=report.remarks,
        lines=report.lines,
    )


def show(places: Places, ticket: str, topic: str) -> ShowResult:
    from pytest_gpuverify.cli.show import render

    path = places.artifact(ticket, topic)
    try:
        art = read_artifact(path)
    except ValueError as exc:
        raise Refused(f"{path} is not a gpuverify artifact ({str(exc).splitlines()[0]})", "run `check` on it") from exc
    return ShowResult(artifact=summary(art, path), text=render(art, path))


def check(places: Places, ticket: str, topic: str | None) -> CheckResult:
    target = places.artifact(ticket, topic) if topic else places.ticket(ticket)
    code, out, err = gpuverify("check", str(target))
    lines = [line for line in (out + err).splitlines() if line.strip()]
    return CheckResult(
        ok=code == 0,
        exit_code=code,
        mismatches=[x for x in lines if x.startswith(("MISMATCH", "OVERLAP"))],
        lines=lines,
    )


def compare(
    places: Places,
    base: tuple[str, str],
    head: tuple[str, str] | None,
    history: bool,
    store: str | None,
    options: list[str],
    repo: str | None = None,
) -> CompareResult:
    argv = ["compare", str(places.artifact(*base))]
    if head is not None:
        argv.append(str(places.artifact(*head)))
    if history:
        argv += ["--history", *commit_graph(places, repo)] + (["--store", store] if store else [])
    code, out, err = gpuverify(*argv, *options, "--json")
    try:
        doc = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        doc = None
    said = " ".join(err.split()) or None
    return CompareResult(exit_code=code, comparison=doc, message=said if doc is None or said else None)


def commit_graph(places: Places, repo: str | None) -> list[str]:
    """``--repo`` of the Repos row whose commits order the history (none when the env file has no such row)."""
    try:
        return ["--repo", str(places.repo(repo)[1])]
    except Refused:
        if repo is not None:
            raise
        return []


def history_show(
    places: Places, target: str, ref: str | None, store: str | None, newest: int | None, repo: str | None
) -> TextResult:
    for name, value in (("target", target), ("ref", ref)):
        if value is not None and (value.startswith("-") or not value.strip()):
            raise Refused(f"{name} {value!r} is not a name", f"name a {name} (it cannot start with '-')")
    argv = ["history", "show", target, *commit_graph(places, repo)]
    argv += (["--ref", ref] if ref else []) + (["--store", store] if store else [])
    if newest is not None:
        argv += ["--all"] if newest == 0 else ["--newest", str(newest)]
    code, out, err = gpuverify(*argv)
    return TextResult(exit_code=code, text=(out + err).strip())


def handoff(places: Places, ticket: str, base_ticket: str | None) -> dict:
    argv = ["handoff", str(places.ticket(ticket))] + (
        ["--base", str(places.ticket(base_ticket))] if base_ticket else []
    )
    code, out, err = gpuverify(*argv)
    if code != 0:
        raise Refused(
            " ".join(err.split()) or f"handoff exited {code}", "run `check` on the ticket and fix what it says"
        )
    return json.loads(out)


def report(places: Places, tickets: list[str], history: bool, store: str | None) -> ReportResult:
    if not tickets:
        raise Refused("no tickets named", "name one ticket or more")
    folders = [places.ticket(t) for t in tickets]
    out = folders[0] / "report.html"
    argv = ["report", *map(str, folders), "-o", str(out)]
    if history:
        argv += ["--history"] + (["--store", store] if store else [])
    code, text, err = gpuverify(*argv)
    return ReportResult(exit_code=code, path=str(out) if out.is_file() else None, text=(text + err).strip())
