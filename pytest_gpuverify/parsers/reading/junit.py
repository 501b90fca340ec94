"""An inner pytest run's JUnit XML report: every test's outcome, read as a stream.

Each test is counted once. A retry plugin (pytest-rerunfailures, common in CI configurations) lists a
test once per attempt, the failed attempt without its failure: a test listed more than once failed an
attempt, and is failed here whatever its last attempt did. A module that could not be collected is
no test case (``collect_errors``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.parsers.reading.lines import describe_size
from pytest_gpuverify.parsers.reading.measures import CloseBlock, block_from_message
from pytest_gpuverify.parsers.result import REASON_CAP

MESSAGE_CAP = 200
JUNIT_BYTES_CAP = 32 << 20
BLOCK_CAP = 1_000


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0  # expected failures: pytest's own word, never "skipped"
    deselected: int = 0
    reruns: int = 0  # attempts a retry plugin made again (the terminal's ``1 rerun``)

    @property
    def ran(self) -> int:
        """The tests that ran: passed, failed or errored (a collection error is none)."""
        return self.passed + self.failed + self.errors

    def describe(self) -> str:
        return ", ".join(f"{v} {k}" for k, v in vars(self).items() if v) or "nothing"


RETRIED = "retried"  # the kind of a test that failed an attempt and ran again (in ``bad``)
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


@dataclass
class JunitResult:
    counts: Counts = field(default_factory=Counts)
    bad: list[tuple[str, str, str]] = field(default_factory=list)  # (node id, "failed"|"error"|RETRIED, message)
    blocks: dict[str, CloseBlock] = field(default_factory=dict)
    problem: str | None = None  # set: the file could not be read whole, so nothing of it is used
    collect_errors: list[tuple[str, str]] = field(default_factory=list)  # (module, message): no test case
    attempts: dict[str, int] = field(default_factory=dict)  # node id -> attempts, for a test listed more than once
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> its worst outcome over its attempts
    retried_passes: int = 0  # tests failed here for a retry whose every listed attempt passed (pytest exited 0)

    def sum_up(self) -> None:
        """The counts, each test once; a test run more than once is failed (its first attempt was)."""
        counts = Counts()
        named = {nodeid for nodeid, _, _ in self.bad}
        for nodeid, outcome in self.outcomes.items():
            if nodeid in self.attempts and outcome in ("passed", "skipped", "xfailed"):
                outcome = "failed"
                self.retried_passes += 1
                if nodeid not in named and len(self.bad) < REASON_CAP:
                    self.bad.append((nodeid, RETRIED, f"listed {self.attempts[nodeid]} times"))
            key = {
                "passed": "passed",
                "skipped": "skipped",
                "xfailed": "xfailed",
                "failed": "failed",
                "error": "errors",
            }[outcome]
            setattr(counts, key, getattr(counts, key) + 1)
        self.counts = counts


def junit_nodeid(classname: str, name: str) -> str:
    """``tests.kernels.test_x.TestK`` + ``test_m`` -> ``tests/kernels/test_x.py::TestK::test_m``."""
    if not classname:
        return name
    parts = classname.split(".")
    i = len(parts)
    while i > 1 and parts[i - 1][:1].isupper():
        i -= 1
    return "::".join(["/".join(parts[:i]) + ".py", *parts[i:], name])


def read_junit(path: Path, cap: int = JUNIT_BYTES_CAP) -> JunitResult:
    """Every testcase's outcome, streamed (elements are dropped once read); never raises."""
    result = JunitResult()
    try:
        _read_junit(Path(path), cap, result)
        result.sum_up()
    except ET.ParseError as exc:
        result.problem = f"not well-formed XML ({exc})"
    except (OSError, ValueError, RecursionError) as exc:
        result.problem = f"unreadable ({type(exc).__name__}: {exc})"
    return result


def _read_junit(path: Path, cap: int, result: JunitResult) -> None:
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    stack: list[ET.Element] = []
    total, tail = 0, b""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > cap:
                result.problem = f"larger than {describe_size(cap)}"
                return
            if b"<!DOCTYPE" in tail + chunk or b"<!ENTITY" in tail + chunk:
                result.problem = "it declares a DOCTYPE or ENTITY, which pytest never writes"
                return
            tail = chunk[-16:]
            parser.feed(chunk)
            _take_events(parser, stack, result)
        parser.close()
        _take_events(parser, stack, result)
    if total == 0:
        result.problem = "empty file"


def _take_events(parser: ET.XMLPullParser, stack: list[ET.Element], result: JunitResult) -> None:
    # typeshed allows 1-tuples (other event kinds); start and end events (the only ones asked for) are pairs
    for event, elem in parser.read_events():  # type: ignore[misc]
        assert isinstance(elem, ET.Element)  # and carry elements
        if event == "start":
            stack.append(elem)
            continue
        stack.pop()
        if elem.tag == "testcase":
            _take_testcase(elem, result)
            elem.clear()
            if stack:
                stack[-1].remove(elem)  # the root would otherwise keep every (empty) testcase


def _take_testcase(elem: ET.Element, result: JunitResult) -> None:
    nodeid = junit_nodeid(elem.get("classname", ""), elem.get("name", "?"))
    outcome = "passed"
    for child in elem:
        if child.tag in ("failure", "error"):
            kind = "failed" if child.tag == "failure" else "error"
            message = (child.get("message") or child.text or "").strip()
            if kind == "error" and child.get("message") == "collection failure" and not elem.get("classname"):
                if len(result.collect_errors) < REASON_CAP:
                    result.collect_errors.append((nodeid, _first_error((child.text or "").strip()) or message))
                return
            if len(result.bad) < REASON_CAP and all(b[0] != nodeid for b in result.bad):
                result.bad.append((nodeid, kind, message.splitlines()[0][:MESSAGE_CAP] if message else ""))
            block = block_from_message(message)
            if block is not None and len(result.blocks) < BLOCK_CAP:
                result.blocks.setdefault(nodeid, block)
            outcome = kind if _RANK[kind] > _RANK[outcome] else outcome
        elif child.tag == "skipped" and outcome == "passed":  # pytest writes an xfail as <skipped type="pytest.xfail">
            outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
    before = result.outcomes.get(nodeid)
    if before is not None:
        result.attempts[nodeid] = result.attempts.get(nodeid, 1) + 1
        outcome = before if _RANK[before] > _RANK[outcome] else outcome
    result.outcomes[nodeid] = outcome


def _first_error(text: str) -> str:
    """A collection failure's telling line: its last ``E`` line (``E   ModuleNotFoundError: ...``)."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return lines[-1][:MESSAGE_CAP] if lines else ""
