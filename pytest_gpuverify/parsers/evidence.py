"""What recognizers yield, and the one tally it is summed into: the records of a reading.

A recognizer reports, for the line it reads:

- **a check of its own** (:meth:`Evidence.mark`): it read the line as a check it counts itself (an
  aiter ``[checkAllclose ...]`` line, a table's status cell, a test's outcome); a failed one also
  names its failure (:meth:`Evidence.fail`);
- **a reading** (:meth:`Evidence.reading`): a passing or failing statement the general readers found
  (``status: FAIL``, ``❌``, ``allclose: False``, ``Mismatched elements: 12 / 1024``);
- **an unattached word** (:meth:`Evidence.unattached`): an error line, a crash text, a failure word
  no check could be attached to;
- and at once, whatever the line: failures, problems, notes and perf rows, each list capped so a
  huge or hostile output cannot grow memory (the rest is counted).

Readings and unattached words are settled per line, once no recognizer may still report on it
(:meth:`Evidence.settle`): negative evidence anywhere on a line outranks every passing reading of
it; a line read as a check is not counted again by a reading; a failure reading on a line whose
check passed is a failed check; an unattached word on a line that failed is part of that failure,
anywhere else it is a problem (the run proves nothing). Each line is at most one check of the
general readings: its first failure names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_gpuverify.parsers.reading.measures import MetricsObserver
from pytest_gpuverify.parsers.result import NOTE_CAP, PERF_ROW_CAP, REASON_CAP, ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import Correctness, PerfRow

ALARM_CAP = 20  # unattached words quoted one by one; the rest are counted in one closing line
QUOTE_CAP = 200
FAILED_WORD = "'failed' printed where no check was read"  # what an unattached failure word says
PRINTED_ERROR = "the run printed an error"


@dataclass
class _Pending:
    """What was reported of one line that is not settled yet."""

    marks_failed: int = 0
    marks_passed: int = 0
    fails: list[str] = field(default_factory=list)  # reasons of failure readings
    passes: int = 0
    summaries: int = 0  # passing summaries (``All 8 tests passed``)
    unattached: list[str] = field(default_factory=list)  # the problems they would be


@dataclass
class Tally:
    """The checks counted so far: ``decisive`` passes can make the verdict's ``passed`` true (a test, an
    aiter check, a status cell of a script's table); checks inside an inner pytest's tests cannot."""

    passed: int = 0
    warning: int = 0
    failed: int = 0
    shapes: int = 0
    decisive: int = 0


class Evidence:
    """Every record of one reading of one output. ``inside_tests``: the kind is an inner pytest run,
    whose tests are its shapes; a reading inside one is a check of that test, no shape of its own."""

    def __init__(self, parser: str, context: ParseContext, inside_tests: bool = False) -> None:
        self.out = ParsedOutput(parser=parser)
        self.context = context
        self.inside_tests = inside_tests
        self.tally = Tally()
        self.nan_count = 0
        self.failures_seen = self.problems_seen = self.notes_seen = self.perf_dropped = self.alarms_seen = 0
        self.failures_listed = 0
        # alarms a check never named (a NaN in a log line): folded by kind, listed after the checks' failures
        self._folded: dict[str, tuple[str, str, int]] = {}  # kind -> (its first reason, where it was, how many)
        self.failure_words = 0  # unattached failure words that became problems
        self.known: dict[str, float] = {}  # tolerances and the largest err ratio, for the correctness
        self.metrics = MetricsObserver(self.fail)  # the worst of each correctness measure printed
        # aiter's checked cases: a table row's ``err`` cell repeats the check line of the same call
        # (aiter_checks.py sums the two up; tables.py counts the cells where no check line was read)
        self.cases: set[int] = set()  # the identities of the checked cases (a row's shape, a perf line's)
        self.err_cells = {"passed": 0, "warning": 0, "failed": 0}
        self.err_cells_counted = False
        self._pending: dict[int, _Pending] = {}
        self._settled_through = 0

    # ----- records kept at once ---------------------------------------------------------------
    def fail(self, reason: str, fold: tuple[str, str] | None = None) -> None:
        """A failure; ``fold``: an alarm a log line raised, as (its kind, where: the line and what it
        printed): each kind is one reason with its count, after the failed tests and checks, which
        decided the verdict (``NaN/inf in the printed result: 12 lines; the first, line 35: ...``)."""
        self.failures_seen += 1
        if fold is not None:
            kind, where = fold
            first, at, n = self._folded.get(kind, (reason[:400], where[:400], 0))
            self._folded[kind] = (first, at, n + 1)
            return
        self.failures_listed += 1
        if self.failures_listed <= REASON_CAP:
            self.out.failures.append(reason[:400])

    def problem(self, reason: str) -> None:
        self.problems_seen += 1
        if self.problems_seen <= REASON_CAP:
            self.out.problems.append(reason[:400])

    def note(self, text: str) -> None:
        self.notes_seen += 1
        if self.notes_seen <= NOTE_CAP:
            self.out.notes.append(text[:400])

    def add_perf(self, row: PerfRow) -> bool:
        """Keep ``row``; False where the cap is reached (the row is counted, not kept)."""
        if len(self.out.perf) < PERF_ROW_CAP:
            self.out.perf.append(row)
            return True
        self.perf_dropped += 1
        return False

    def widest(self, name: str, value: float | None) -> None:
        """Keep the largest ``value`` printed of ``name`` (``atol``, ``rtol``, ``err_ratio``)."""
        if value is not None and (name not in self.known or value > self.known[name]):
            self.known[name] = value

    def count(self, passed: int = 0, failed: int = 0, warning: int = 0, shapes: int = 0, decisive: bool = True) -> None:
        """Checks a recognizer counted itself (its failures are named through :meth:`fail`)."""
        t = self.tally
        t.passed += passed
        t.failed += failed
        t.warning += warning
        t.shapes += shapes
        if decisive:
            t.decisive += passed + warning

    # ----- per-line records, settled when the line is ----------------------------------------
    def _line(self, lineno: int) -> _Pending | None:
        if lineno <= self._settled_through:
            return None  # settled already (a buffered table's row): nothing to weigh it against
        pending = self._pending.get(lineno)
        if pending is None:
            pending = self._pending[lineno] = _Pending()
        return pending

    def mark(self, lineno: int, failed: bool) -> None:
        """The line was read as a check of a recognizer's own (it counts it, and names its failure)."""
        pending = self._line(lineno)
        if pending is not None:
            if failed:
                pending.marks_failed += 1
            else:
                pending.marks_passed += 1

    def reading(self, lineno: int, passed: bool, reason: str = "", summary: bool = False) -> None:
        """A general reading of the line: a passing or a failing statement (``reason`` names a failure).
        A passing ``summary`` (``All 8 tests passed``) sums up checks counted already: it is a check
        only where none was."""
        pending = self._line(lineno)
        if pending is None:
            return
        if passed and summary:
            pending.summaries += 1
        elif passed:
            pending.passes += 1
        else:
            pending.fails.append(reason)

    def unattached(self, lineno: int, what: str, text: str) -> None:
        """A word no check was attached to: a problem, unless the line fails (then it is that failure's)."""
        problem = f"line {lineno}: {what}: {text.strip()[:QUOTE_CAP]}"
        pending = self._line(lineno)
        if pending is None:
            self._alarm(problem)
        else:
            pending.unattached.append(problem)

    def settle(self, before: int) -> None:
        """Settle every line before ``before`` (no recognizer reports on them any more)."""
        if before - 1 <= self._settled_through:
            return
        self._settled_through = before - 1
        if not self._pending:
            return
        for lineno in sorted(n for n in self._pending if n < before):
            self._settle_line(self._pending.pop(lineno))

    def _settle_line(self, p: _Pending) -> None:
        failed = bool(p.marks_failed or p.fails)
        if p.fails and not p.marks_failed:
            self._general_check(passed=False)
            self.fail(p.fails[0])
        elif p.passes and not (p.marks_passed or p.marks_failed):
            self._general_check(passed=True)
        elif p.summaries and not (p.marks_passed or p.marks_failed):
            t = self.tally
            if not (t.passed or t.failed or t.warning):
                self._general_check(passed=True)
        if not failed:
            for problem in p.unattached:
                self._alarm(problem)

    def _general_check(self, passed: bool) -> None:
        if self.inside_tests:
            self.count(passed=int(passed), failed=int(not passed), decisive=False)
        else:
            self.count(passed=int(passed), failed=int(not passed), shapes=1)

    def _alarm(self, problem: str) -> None:
        self.alarms_seen += 1
        if FAILED_WORD in problem:
            self.failure_words += 1
        if self.alarms_seen <= ALARM_CAP:
            self.problem(problem)

    # ----- summing up --------------------------------------------------------------------------
    def correctness(self, **known) -> Correctness:
        """The verdict's correctness from the tally: failed when any failure was named, passed when a
        decisive check passed, else unknown; ``known`` adds what the recognizers measured."""
        t = self.tally
        passed: bool | None = False if self.failures_seen else (True if t.decisive else None)
        correctness = Correctness(
            passed=passed,
            shapes_checked=t.shapes,
            checks_passed=t.passed,
            checks_warning=t.warning,
            checks_failed=t.failed,
            nan_count=self.nan_count,
            **known,
        )
        self.metrics.apply(correctness)
        return correctness

    def close(self, reader) -> None:
        """The reader's counts and cut lines into ``out``, and a line for each cap that was hit."""
        from pytest_gpuverify.parsers.reading.lines import describe_size

        self.settle(reader.lines_read + 2)
        if self.alarms_seen > ALARM_CAP:
            self.problem(f"{self.alarms_seen - ALARM_CAP} more error or 'failed' lines not listed")
        out = self.out
        out.lines_read, out.bytes_read = reader.lines_read, reader.bytes_read
        size = describe_size(reader.max_line)
        for lineno, full_len in reader.split_lines[:NOTE_CAP]:
            self.note(f"line {lineno} was longer than {size} ({full_len} bytes); read in its \\r-separated pieces")
        if reader.split > NOTE_CAP:
            self.note(f"{reader.split - NOTE_CAP} more long lines were read in pieces")
        # what was cut was never read: a check in it may have failed
        for lineno, full_len in reader.truncated_lines[:NOTE_CAP]:
            self.problem(
                f"line {lineno} was longer than {size} ({full_len} bytes) with no \\r to split it at; "
                "cut, the rest unread"
            )
        if reader.truncated > NOTE_CAP:
            self.problem(f"{reader.truncated - NOTE_CAP} more lines were cut")
        if self.perf_dropped:
            out.notes.append(f"perf rows capped at {PERF_ROW_CAP}; {self.perf_dropped} more not kept")
        if self.failures_listed > REASON_CAP:
            out.failures.append(f"{self.failures_listed - REASON_CAP} more failures not listed")
        for kind, (first, at, n) in self._folded.items():
            out.failures.append(first if n == 1 else f"{kind}: {n} lines; the first, {at}")
        if self.problems_seen > REASON_CAP:
            out.problems.append(f"{self.problems_seen - REASON_CAP} more problems not listed")
