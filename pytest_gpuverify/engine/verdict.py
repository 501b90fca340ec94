"""Verdicts, exactly as docs/artifacts.md, "Verdicts", states them.

FAIL needs printed evidence from a run on the GPU (a failed check, NaN where a number was due, an
``err`` above tolerance, a failing inner test) or a non-zero exit. INCONCLUSIVE is anything that
proves nothing. PASS is a clean run that checked at least one shape.
"""

from __future__ import annotations

from pytest_gpuverify.config.targets import PYTEST_KINDS, Thresholds
from pytest_gpuverify.engine.floors import limit_findings
from pytest_gpuverify.execute.leftovers import reason as leftover_reason
from pytest_gpuverify.parsers.dtypes import is_low_precision
from pytest_gpuverify.parsers.recognizers.pytest_terminal import NO_RESULT, RAN_NO_TEST
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import Correctness, RunRecord, TargetRecord, Verdict

# The verdict reads what the artifact stores: its run record (``run``: what happened around the
# command) and its target record (``target``: the declared dtype; the kind says whether the command
# is an inner pytest run, whose exit code 5 means "no test ran"). The engine and ``gpuverify check``
# pass the same two models, so there is no second copy of the facts to keep in step.

PYTEST_NO_TESTS = 5


def needs_snr(dtype: str | None) -> bool:
    return is_low_precision(dtype)


def low_precision_output(target: TargetRecord | None, c: Correctness | None) -> tuple[str, str] | None:
    """The low-precision output dtype and where it was read (parsers/dtypes.py), or None."""
    if c is not None and c.dtype is not None and needs_snr(c.dtype):
        return c.dtype, c.dtype_source or "the output"
    declared = target.dtype if target is not None else None
    return (declared, "declaration") if declared and needs_snr(declared) else None


def inner_pytest(target: TargetRecord | None) -> bool:
    """The command is a pytest run (its exit code 5 means "no test ran")."""
    return target is not None and target.kind in PYTEST_KINDS


def threshold_findings(c: Correctness, limits: Thresholds) -> tuple[list[str], list[str]]:
    """(failures, doubts) of the declared limits: a printed value past its limit fails; a limit whose
    value was never printed proves nothing (never an invented number)."""
    failures: list[str] = []
    doubts: list[str] = []
    checks = (
        ("cosine_sim", c.cosine_sim, limits.cosine_sim_min, "min"),
        ("max_abs_error", c.max_abs_error, limits.max_abs_error_max, "max"),
        ("logits_diff", c.logits_diff, limits.logits_diff_max, "max"),
        ("snr_db", c.snr_db, limits.snr_db_min, "min"),
        ("err_ratio", c.err_ratio, limits.err_ratio_max, "max"),
    )
    for name, value, limit, side in checks:
        if limit is None:
            continue
        if value is None:
            doubts.append(f"{name} limit {limit:g} declared, but the output printed no {name}")
        elif (side == "min" and value < limit) or (side == "max" and value > limit):
            word = "below" if side == "min" else "above"
            failures.append(f"{name} {value:g} is {word} the declared limit {limit:g}")
    return failures, doubts


def _not_said(found: list[str], said: list[str]) -> list[str]:
    """The limit failures the parser has not already named line by line (shape_checks.py ends its
    reasons with the same words, ``cosine_sim 0.95 is below the declared limit 0.99``)."""
    return [f for f in found if not any(s.endswith(f) for s in said)]


def decide(
    run: RunRecord,
    parsed: ParsedOutput | None,
    limits: Thresholds | None = None,
    target: TargetRecord | None = None,
) -> tuple[Verdict, list[str]]:
    """The verdict and the reasons behind it, most important first. ``run``: the artifact's run
    record; ``target``: its target record (the declared dtype and the kind)."""
    if run.blocked or not run.ran:
        return "INCONCLUSIVE", list(run.blocked) or ["the command never ran"]
    if run.shared:  # another job computed beside it: neither its timings nor its results are its own
        verdict, reasons = decide(run.model_copy(update={"shared": []}), parsed, limits, target)
        return "INCONCLUSIVE", list(run.shared) + [r for r in reasons if r not in run.shared]
    if run.imports_outside:  # it tested another copy of the package: nothing it printed is the worktree's
        verdict, reasons = decide(run.model_copy(update={"imports_outside": []}), parsed, limits, target)
        return "INCONCLUSIVE", list(run.imports_outside) + [r for r in reasons if r not in run.imports_outside]

    failures: list[str] = []
    doubts: list[str] = []
    ran_none = False
    if parsed is not None:
        failures.extend(parsed.failures)
        doubts.extend(parsed.problems)
    if run.timed_out:
        doubts.insert(0, "timeout: the command ran past --gpu-timeout and was stopped")
    elif run.interrupted:
        doubts.insert(0, f"interrupted ({run.interrupted}): the command was stopped")
    elif run.container_died:
        doubts.insert(0, "the container stopped during the run")
    elif run.exit_code is None:
        doubts.insert(0, "the command's exit code could not be read")
    elif inner_pytest(target) and run.exit_code == PYTEST_NO_TESTS:
        doubts.insert(0, "the inner pytest collected no test (exit code 5)")
    elif inner_pytest(target) and run.exit_code != 0 and parsed is not None and parsed.ran_no_test is not None:
        # a usage error, a conftest or test module that cannot be imported: nothing of the kernel ran;
        # said once, with the error it printed (the parser's own words for it and that line not again)
        first = f": {parsed.ran_no_test}" if parsed.ran_no_test else ""
        doubts = [d for d in doubts if not _says_ran_no_test(d, parsed.ran_no_test)]
        doubts.insert(0, f"the inner pytest ran no test (exit code {run.exit_code}){first}")
        ran_none = True
    elif run.exit_code != 0:
        # what the run printed failing decided the verdict; the exit code follows from it (first alone)
        failures.append(f"exit code {run.exit_code}")
    doubts.extend(run.output_problems)
    doubts.extend(run.trace_doubts)  # --gpu-trace: a printed time its kernels contradict (trace/corroborate.py)
    if run.leftovers:  # they ran on the GPU beyond the command: nothing says what they did there
        doubts.append(leftover_reason(run.leftovers))

    correctness = parsed.correctness if parsed is not None else None
    if correctness is not None and limits is not None:
        over, unknown = threshold_findings(correctness, limits)
        failures.extend(_not_said(over, failures))
        doubts.extend(unknown)
    if parsed is not None and limits is not None and (limits.floors or limits.ceilings):
        over, unknown = limit_findings(parsed.perf, limits.floors, limits.ceilings)
        failures.extend(over)
        doubts.extend(unknown)
    if failures:
        return "FAIL", _once(failures + doubts)
    if ran_none:
        pass  # no result is what running no test means: said already
    elif correctness is None or correctness.passed is None:
        doubts.append("no readable correctness result in the output")
    elif correctness.shapes_checked < 1:
        doubts.append("the output checked no shape")
    low = low_precision_output(target, correctness)
    if low and (correctness is None or correctness.snr_db is None):
        doubts.append(f"{low[0]} output without an SNR (dtype from {low[1]})")
    if doubts:
        return "INCONCLUSIVE", _once(doubts)
    return "PASS", []


def _says_ran_no_test(doubt: str, first_error: str) -> bool:
    """The parser's reasons a run that ran no test repeats: its own "ran no test", "no pytest result",
    and the error line the verdict's reason quotes (``line 2: the run printed an error: <the line>``)."""
    if doubt.startswith(RAN_NO_TEST) or doubt == NO_RESULT:
        return True
    where, _, said = first_error.partition(": ")
    return bool(said) and doubt.startswith(f"{where}: ") and doubt.endswith(said)


def _once(reasons: list[str]) -> list[str]:
    """Each reason once, in its first place."""
    return list(dict.fromkeys(reasons))


def verdict_and_reasons(
    run: RunRecord,
    parsed: ParsedOutput | None,
    limits: Thresholds | None = None,
    target: TargetRecord | None = None,
) -> tuple[Verdict, list[str]]:
    """What the artifact states: :func:`decide`'s verdict and reasons, then every fact recorded as
    null with why. The engine and ``gpuverify check`` both call this, so they cannot drift apart."""
    verdict, reasons = decide(run, parsed, limits, target)
    return verdict, reasons + [u for u in run.unknowns if u not in reasons]
