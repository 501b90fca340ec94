"""The verdict (engine/verdict.py), rule by rule: PASS, FAIL and INCONCLUSIVE from the exit code, the
correctness read and the reasons that block a run."""

from pytest_gpuverify.engine.verdict import decide
from pytest_gpuverify.parsers.result import ParsedOutput
from pytest_gpuverify.records.artifact import Correctness, RunRecord, TargetRecord


def parsed(passed=True, shapes=2, failures=(), problems=(), snr=None):
    return ParsedOutput(
        parser="aiter",
        correctness=Correctness(passed=passed, shapes_checked=shapes, snr_db=snr),
        failures=list(failures),
        problems=list(problems),
    )


def ran():
    return RunRecord(ran=True, exit_code=0)


def declared(dtype=None, kind="aiter-op-test"):
    """The artifact's target record: the verdict reads the declared dtype and the kind from it."""
    return TargetRecord(name="t", kind=kind, dtype=dtype)


def test_clean_run_passes():
    assert decide(ran(), parsed()) == ("PASS", [])


def test_blocked_run_is_inconclusive_with_its_reason():
    verdict, reasons = decide(RunRecord(blocked=["NO_GPU: no idle GPU"]), None)
    assert verdict == "INCONCLUSIVE" and reasons[0].startswith("NO_GPU")


def test_failed_check_with_exit_zero_fails():
    verdict, reasons = decide(ran(), parsed(passed=False, failures=["line 3: checkAllclose failed!"]))
    assert verdict == "FAIL" and "line 3" in reasons[0]


def test_nonzero_exit_fails_even_without_output():
    verdict, reasons = decide(RunRecord(ran=True, exit_code=1), parsed(passed=None, shapes=0))
    assert verdict == "FAIL" and reasons[0] == "exit code 1"


def test_no_correctness_is_inconclusive():
    verdict, reasons = decide(ran(), parsed(passed=None, shapes=0))
    assert verdict == "INCONCLUSIVE" and "no readable correctness" in reasons[0]


def test_timeout_is_inconclusive_not_fail():
    verdict, reasons = decide(RunRecord(ran=True, exit_code=124, timed_out=True), parsed())
    assert verdict == "INCONCLUSIVE" and reasons[0].startswith("timeout")


def test_interrupt_and_dead_container_are_inconclusive():
    assert decide(RunRecord(ran=True, interrupted="KeyboardInterrupt"), parsed())[0] == "INCONCLUSIVE"
    assert decide(RunRecord(ran=True, exit_code=137, container_died=True), parsed())[0] == "INCONCLUSIVE"


def test_unreadable_output_problem_blocks_pass():
    verdict, reasons = decide(ran(), parsed(problems=["line 9: summary table has elided columns"]))
    assert verdict == "INCONCLUSIVE" and "elided" in reasons[0]


def test_fp8_output_needs_snr():
    assert decide(ran(), parsed(), target=declared("fp8"))[0] == "INCONCLUSIVE"
    assert decide(ran(), parsed(snr=31.5), target=declared("fp8"))[0] == "PASS"
    assert decide(ran(), parsed(), target=declared("bf16"))[0] == "PASS"


def test_failure_beats_doubt():
    verdict, _ = decide(ran(), parsed(passed=False, failures=["err 0.97"], problems=["truncated"]))
    assert verdict == "FAIL"


def test_declared_thresholds():
    from pytest_gpuverify.config.targets import Thresholds

    out = parsed()
    out.correctness.cosine_sim = 0.985
    verdict, reasons = decide(ran(), out, Thresholds(cosine_sim_min=0.99))
    assert verdict == "FAIL" and "cosine_sim 0.985 is below the declared limit 0.99" in reasons
    out.correctness.cosine_sim = 0.999
    assert decide(ran(), out, Thresholds(cosine_sim_min=0.99))[0] == "PASS"
    verdict, reasons = decide(ran(), out, Thresholds(max_abs_error_max=0.01))
    assert verdict == "INCONCLUSIVE" and "printed no max_abs_error" in reasons[0]


def test_inner_pytest_exit_5_is_inconclusive_not_fail():
    verdict, reasons = decide(
        RunRecord(ran=True, exit_code=5), parsed(passed=None, shapes=0), target=declared(kind="flydsl-pytest")
    )
    assert verdict == "INCONCLUSIVE" and "collected no test" in reasons[0]
    assert decide(RunRecord(ran=True, exit_code=5), parsed(), target=declared())[0] == "FAIL", (
        "a script's exit 5 is its own failure"
    )
