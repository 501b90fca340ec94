"""One raw log for a target's repeated runs (``repeats``, ``--gpu-ab``), and how it is read back.

The engine writes a begin line before each run and an end line after it; everything between is that
run's own output, unchanged. Each line carries a nonce chosen per log and first written on its first
line, so a command cannot print a line that reads as ours. :func:`parse_log` reads every run's part
with the target's own parser (never only the last run), tags each perf row with its ``run`` and
``side``, and merges the runs' correctness so that one failing run makes the whole a failure. The
engine and ``gpuverify check`` both read the log through it. A log without these lines (one run) is
read as before.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from pytest_gpuverify.parsers.result import ParseContext, ParsedOutput
from pytest_gpuverify.records.artifact import AutotuneChoice, Correctness, RunSlice
from pytest_gpuverify.records.raw_log import Segment, split_log

# a harness's own count of timed steps, the word before the number ("runs=50", "steps: 50",
# "num_iters=20", "--n-repeats 100") or after it ("50 iterations", "100 timed runs"); a count
# qualified as warm-up ("warmup_iters=10", "10 warmup steps") is not a count of timed steps
_STEP_WORD = r"(?:runs|steps|iters|iterations|repeats|reps|trials)"
STEP_COUNT = re.compile(
    rf"(?<![\w-])-{{0,2}}(?P<warm1>warm[-_ ]?up[-_ ]?)?(?:num[-_]|n[-_])?{_STEP_WORD}\b\s*[=:]?\s*(?P<n1>\d+)\b"
    rf"|\b(?P<n2>\d+)\s+(?P<warm2>warm[-_ ]?up\s+)?(?:timed\s+|measured\s+)?{_STEP_WORD}\b",
    re.I,
)


def step_counts(line: str) -> list[tuple[int, str]]:
    """The timed-step counts a line prints, with the text that printed each (warm-up counts left out)."""
    found = []
    for m in STEP_COUNT.finditer(line):
        if m.group("warm1") or m.group("warm2"):
            continue
        found.append((int(m.group("n1") or m.group("n2")), m.group(0).strip()))
    return found


def slices_of(segments: list[Segment], warmups: bool = False) -> list[RunSlice]:
    """The run records the log's own lines state (the artifact's ``runs`` must equal them); ``warmups``:
    those of the unmeasured runs 0 instead (``ab.warmups``)."""
    out = []
    for seg in segments:
        if (seg.run == 0) != warmups:
            continue
        end = seg.end or {}
        out.append(
            RunSlice(
                run=seg.run,
                side=seg.side,
                checkout=seg.begin.get("checkout"),
                exit_code=end.get("exit_code"),
                timed_out=bool(end.get("timed_out")),
                interrupted=end.get("interrupted"),
                container_died=bool(end.get("container_died")),
                junit_xml=end.get("junit_xml"),
            )
        )
    return out


def parse_log(kind: str, path: Path, context: ParseContext) -> ParsedOutput:
    """The raw log read as the engine wrote it: one run as before; repeated runs each on its own."""
    from pytest_gpuverify.parsers.reader import parse_output

    segments = split_log(path) if Path(path).exists() else None
    if segments is None:
        parsed = parse_output(kind, path, context)
        parsed.problems.extend(step_problems([(None, parsed, _read_text(path))], context.min_steps))
        return parsed
    results, warmed = [], []
    with tempfile.TemporaryDirectory(prefix="gpuverify-runs-") as tmp:
        for seg in segments:
            part = Path(tmp) / f"run-{seg.run}-{seg.side or ''}.log"
            part.write_bytes(b"".join(seg.lines))
            end = seg.end or {}
            junit = end.get("junit_xml")
            ctx = context.model_copy(
                update={"exit_code": end.get("exit_code"), "junit_xml": Path(path).parent / junit if junit else None}
            )
            parsed = parse_output(kind, part, ctx)
            if seg.run == 0:  # a warm-up (--gpu-ab-cache warm): no result; only the choices its tuning made
                warmed += [_placed(c, seg) for c in parsed.autotune]
                continue
            results.append((seg, parsed, part.read_text(errors="replace")))
    merged = merge(results)
    merged.autotune[:0] = warmed
    merged.problems.extend(step_problems(results, context.min_steps))
    return merged


def merge(results: list[tuple[Segment, ParsedOutput, str]]) -> ParsedOutput:
    """All runs as one output: every run's rows (tagged), failures and problems (named by run), and
    correctness at its worst: one run's failed check fails the whole, one unreadable run is unknown."""
    out = ParsedOutput(parser=results[0][1].parser if results else "none")
    if not results:
        out.problems.append("the log names repeated runs but holds none")
        return out
    for seg, parsed, _ in results:
        where = f"{seg.label} (log lines from {seg.first_line})"
        for row in parsed.perf:
            update = {"run": seg.run, "side": row.side or seg.side}
            if row.source_line is not None:
                update["source_line"] = row.source_line + seg.first_line - 1
            out.perf.append(row.model_copy(update=update))
        out.autotune += [_placed(c, seg) for c in parsed.autotune]
        out.failures += [f"{where}: {r}" for r in parsed.failures]
        out.problems += [f"{where}: {r}" for r in parsed.problems]
        if seg.end is None:
            out.problems.append(f"{where}: the log ends inside this run (no end line)")
        out.notes += [f"{seg.label}: {n}" for n in parsed.notes]
        out.lines_read += parsed.lines_read
        out.bytes_read += parsed.bytes_read
        out.dtypes_seen += [d for d in parsed.dtypes_seen if d not in out.dtypes_seen][:20]
        if out.ran_no_test is None and parsed.ran_no_test is not None:
            out.ran_no_test = f"{where}: {parsed.ran_no_test}" if parsed.ran_no_test else ""
    out.correctness = worst_correctness([p.correctness for _, p, _ in results])
    return out


def _placed(choice: AutotuneChoice, seg: Segment) -> AutotuneChoice:
    """A run's printed choice as the whole log places it: its run, side and log line."""
    line = choice.line + seg.first_line - 1 if choice.line is not None else None
    return choice.model_copy(update={"run": seg.run, "side": seg.side, "line": line})


def worst_correctness(each: list[Correctness]) -> Correctness:
    passed = [c.passed for c in each]
    values = lambda name: [getattr(c, name) for c in each if getattr(c, name) is not None]  # noqa: E731
    lowest = lambda name: min(values(name), default=None)  # noqa: E731
    highest = lambda name: max(values(name), default=None)  # noqa: E731
    first = next((c for c in each if c.dtype), each[0])
    return Correctness(
        passed=False if False in passed else None if None in passed else True,
        rtol=each[0].rtol,
        atol=each[0].atol,
        nan_count=sum(c.nan_count for c in each),
        snr_db=lowest("snr_db"),
        shapes_checked=min(c.shapes_checked for c in each),
        checks_passed=sum(c.checks_passed for c in each),
        checks_warning=sum(c.checks_warning for c in each),
        checks_failed=sum(c.checks_failed for c in each),
        cosine_sim=lowest("cosine_sim"),
        max_abs_error=highest("max_abs_error"),
        logits_diff=highest("logits_diff"),
        err_ratio=highest("err_ratio"),
        dtype=first.dtype,
        dtype_source=first.dtype_source,
    )


def step_problems(results, min_steps: int | None) -> list[str]:
    """``min_steps``: each run's printed step counts (a row's ``runs`` column, a ``steps: 50`` line)
    must reach it; a run that printed fewer proves nothing about its speed. A run that printed no
    count at all is not held to it (there is nothing to read)."""
    if not min_steps:
        return []
    problems = []
    for seg, parsed, text in results:
        counts = [(r.runs, f"perf row {r.shape} {r.name}") for r in parsed.perf if r.runs is not None]
        for lineno, line in enumerate(text.splitlines(), 1):
            counts += [(n, f"line {lineno} '{said}'") for n, said in step_counts(line)]
        short = [(n, where) for n, where in counts if n < min_steps]
        if short:
            n, where = min(short)
            label = f"{seg.label}: " if seg is not None else ""
            problems.append(
                f"{label}printed {n} steps ({where}), fewer than min_steps {min_steps}. "
                "Fix: run the harness with more steps"
            )
    return problems


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(8 << 20).decode(errors="replace")
    except OSError:
        return ""


def runs_problems(art, raw: Path | None) -> list[str]:
    """``gpuverify check``: the artifact's ``runs`` are the ones the log's own lines state, and its
    ``perf_summary`` the one its perf rows give."""
    from pytest_gpuverify.engine.summary import summary_problems

    problems = summary_problems(art)
    segments = split_log(raw) if raw is not None and raw.exists() else None
    stated = [s.model_dump() for s in slices_of(segments)] if segments is not None else []
    recorded = [s.model_dump() for s in art.runs]
    if recorded != stated:
        problems.append(
            f"runs: the artifact records {len(recorded)} run(s), the raw log's lines state "
            f"{len(stated)}" + ("" if len(recorded) != len(stated) else " with other facts")
        )
    if art.ab is not None:
        shas = {"A": art.ab.base_sha, "B": art.ab.head_sha}
        problems += [
            f"runs: run {s['run']} side {s['side']} ran {s['checkout']}, ab says side {s['side']} is "
            f"{shas.get(s['side'])}"
            for s in stated
            if s["side"] in shas and s["checkout"] != shas[s["side"]]
        ]
    if art.ab is not None and segments is not None:
        warm = [s.model_dump() for s in slices_of(segments, warmups=True)]
        if [s.model_dump() for s in art.ab.warmups] != warm:
            problems.append(
                f"ab.warmups: the artifact records {len(art.ab.warmups)} warm-up run(s), the raw log's "
                f"lines state {len(warm)}"
            )
    order = [f"{s['side']}{s['run']}" for s in stated]
    if art.ab is not None and art.ab.order != order:
        problems.append(f"ab.order is {art.ab.order}, the raw log ran {order}")
    return problems
