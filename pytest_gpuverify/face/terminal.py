"""What the terminal shows: the gpuverify section of the summary (the live line of a wait is
reporting/live.py's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from pytest_gpuverify.records.machine import machine_line
from pytest_gpuverify.reporting.ci_summary import CiPublisher


def summarize_reasons(reasons: list[str]) -> str:
    if not reasons:
        return "ok"
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return reasons[0][:160] + more


def verdict_properties(artifact, artifact_path: Path) -> list[tuple[str, str]]:
    """What a target's summary line needs, as report properties (they travel from xdist workers)."""
    return [
        ("gpuverify_verdict", artifact.verdict),
        ("gpuverify_artifact", str(artifact_path)),
        ("gpuverify_gpus", ",".join(str(g.index) for g in artifact.gpus) or "-"),
        ("gpuverify_reason", summarize_reasons(artifact.reasons if artifact.verdict != "PASS" else [])),
        *detail_properties(artifact),
    ]


MAX_PERF_PROPERTIES = 20  # a tuning sweep prints hundreds of rows: the JUnit file keeps the first ones


def _num(value: float) -> str:
    return f"{value:.4g}"


def detail_properties(artifact) -> list[tuple[str, str]]:
    """Host, shapes checked, lowest SNR/cosine, each perf row's key number (JUnit properties, CI summary)."""
    c = artifact.correctness
    props = [("gpuverify_host", artifact.host or "-"), ("gpuverify_shapes", str(c.shapes_checked))]
    if artifact.machine is not None:
        props.append(("gpuverify_machine", machine_line(artifact.machine)))
    if c.snr_db is not None:
        props.append(("gpuverify_snr_db", _num(c.snr_db)))
    if c.cosine_sim is not None:
        props.append(("gpuverify_cosine", _num(c.cosine_sim)))
    for i, row in enumerate(artifact.perf[:MAX_PERF_PROPERTIES]):
        side = f" [{row.side}]" if row.side else ""
        value = f"{_num(row.us_median)} us" if row.us_median is not None else "-"
        props.append((f"gpuverify_perf_{i:02d}", f"{row.name} {row.shape}{side}: {value}"))
    if len(artifact.perf) > MAX_PERF_PROPERTIES:
        props.append(("gpuverify_perf_more", str(len(artifact.perf) - MAX_PERF_PROPERTIES)))
    return props


def summary_lines(verdicts: Iterable[tuple[str, dict]]) -> list[str]:
    """One line per target: verdict, GPU(s), first reason, artifact path; grouped under a line per
    host when the targets ran on several (GPU hosts over SSH: remote/)."""
    verdicts = list(verdicts)

    def line(nodeid: str, p: dict, indent: str = "") -> str:
        return (
            f"{indent}{p['gpuverify_verdict']:<12} {nodeid}  gpu {p.get('gpuverify_gpus', '-')}  "
            f"{p.get('gpuverify_reason', '')}  -> {p.get('gpuverify_artifact', '')}"
        )

    def machines(mine: list[tuple[str, dict]], indent: str = "") -> list[str]:
        """The header: the machine the targets ran on (records/machine.py), once per distinct record."""
        return [
            f"{indent}machine: {m}"
            for m in dict.fromkeys(p["gpuverify_machine"] for _, p in mine if p.get("gpuverify_machine"))
        ]

    hosts = sorted({p.get("gpuverify_host", "-") for _, p in verdicts})
    if len(hosts) < 2:
        return machines(verdicts) + [line(nodeid, p) for nodeid, p in verdicts] or ["no GPU targets ran"]
    lines = []
    for host in hosts:
        mine = [(nodeid, p) for nodeid, p in verdicts if p.get("gpuverify_host", "-") == host]
        lines.append(f"host {host}: {sum(p['gpuverify_verdict'] == 'PASS' for _, p in mine)}/{len(mine)} PASS")
        lines += machines(mine, "  ") + [line(nodeid, p, "  ") for nodeid, p in mine]
    return lines


class VerdictSummary:
    """Collects every target's verdict from the reports (its own, or those xdist workers send)
    and prints the gpuverify section of the terminal summary. ``engine()``: this process's session,
    whose outcomes also hold targets that never reported (stopped by Ctrl-C or SIGTERM)."""

    def __init__(
        self,
        engine: Callable[[], object | None] = lambda: None,
        ci_summary: str | None = None,
        history: str | None = None,
        history_ref: str | None = None,
    ) -> None:
        self.verdicts: list[tuple[str, dict]] = []
        self.reported: set[str] = set()  # the node ids in ``verdicts``
        self._engine = engine
        self._ci_summary = ci_summary  # --gpu-ci-summary: the GitHub markdown, written there too
        self._history = history  # --gpu-history: the store each artifact is added to as its target ends
        self._history_ref = history_ref  # --gpu-history-ref: the ref they are stored under
        self.stored: dict[str, str] = {}  # asked artifact path -> where it was written, as xdist workers said
        self.write_problems: list[str] = []  # xdist workers' artifacts not written where asked
        self._ci = None  # the CI lines' publisher (reporting/ci_summary.py), made with the first verdict
        self._ci_problems: list[str] = []
        self._stored_history = None  # the session's adds to the history store (history/session.py)

    def pytest_runtest_logreport(self, report) -> None:
        props = dict(report.user_properties)
        if report.when == "call" and "gpuverify_verdict" in props:
            if report.nodeid in self.reported:
                return  # a rerun plugin's next call of the target: its first verdict, reported again
            self.reported.add(report.nodeid)
            props.setdefault("gpuverify_file", report.location[0])  # relative to the rootdir, for annotations
            self.verdicts.append((report.nodeid, props))
            self.target_ended(props)

    def target_ended(self, props: dict) -> None:
        """A target's CI lines and history add, as it ends (its artifact is written by then): a session
        killed later keeps them for the targets it finished."""
        self._ci_problems += self.ci().update(self.verdicts)
        history = self.history()
        if history is not None and props.get("gpuverify_artifact"):
            history.add([Path(props["gpuverify_artifact"])])  # one not on this machine (a GPU host's) waits for the end

    def ci(self):
        if self._ci is None:
            self._ci = CiPublisher(self._ci_summary)
        return self._ci

    def history(self):
        if self._history and self._stored_history is None:
            from pytest_gpuverify.history.db import locate
            from pytest_gpuverify.history.session import SessionHistory

            self._stored_history = SessionHistory(locate(self._history), self._history_ref)
        return self._stored_history

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The exit status is 0 only when every target is PASS, whatever a plugin made of the reports."""
        if session.exitstatus == 0 and any(p.get("gpuverify_verdict") != "PASS" for _, p in self.verdicts):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if terminalreporter.config.getoption("collectonly", False):
            terminalreporter.section("gpuverify")
            terminalreporter.line("--collect-only: GPU targets were collected, none was run")
            return
        verdicts = list(self.verdicts)
        reported = {p.get("gpuverify_artifact") for _, p in verdicts}
        engine = self._engine()
        outcomes = getattr(engine, "outcomes", None) or []
        for outcome in outcomes:
            path = getattr(outcome, "stored_path", None) or outcome.artifact_path
            if str(outcome.artifact_path) not in reported and str(path) not in reported:  # its report never came
                verdicts.append((outcome.target.name, dict(verdict_properties(outcome.artifact, path))))
        # the name each artifact really got when written, where the report came before it was known:
        # a GPU host's artifact, named by its copy here
        stored = {
            **self.stored,
            **{str(o.artifact_path): str(o.stored_path) for o in outcomes if getattr(o, "stored_path", None)},
        }
        verdicts = [
            (
                nodeid,
                {
                    **p,
                    "gpuverify_artifact": stored.get(p.get("gpuverify_artifact", ""), p.get("gpuverify_artifact", "")),
                },
            )
            for nodeid, p in verdicts
        ]
        terminalreporter.section("gpuverify")
        for line in summary_lines(verdicts):
            terminalreporter.line(line)
        for problem in self.write_problems:
            terminalreporter.line(f"gpuverify: {problem}", red=True)
        for orphan in getattr(engine, "orphan_logs", None) or []:  # the engine's, found at close
            terminalreporter.line(f"gpuverify: {orphan.log}: {orphan.says()}", yellow=True)
        # the same lines as each target's end wrote, for the whole session: rewritten, never twice
        for problem in dict.fromkeys(self._ci_problems + self.ci().update(verdicts, final=True)):
            terminalreporter.line(f"gpuverify: {problem}", red=True)
        history = self.history()
        if history is not None:
            history.add([Path(p["gpuverify_artifact"]) for _, p in verdicts if p.get("gpuverify_artifact")])
            lines, trouble = history.lines()
            for line in lines:
                terminalreporter.line(f"gpuverify: {line}", red=trouble)
