"""`gpuverify check` re-derives the whole verdict and its reasons from the raw output and the run record.

The artifacts are the engine's own (real pytest session, real container, simulated GPUs), made once
per module; each test tampers with a copy.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
from probe_paths import without_probe

from pytest_gpuverify.cli.check import PARTLY
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.engine.verdict import verdict_and_reasons
from pytest_gpuverify.records.artifact import RunRecord, TargetRecord, read_artifact


def test_the_run_record_the_verdict_reads_round_trips_through_the_artifact():
    run = RunRecord(
        ran=True,
        exit_code=5,
        timed_out=True,
        interrupted="SIGTERM",
        container_died=True,
        output_problems=["output passed 1 GiB; the rest was not saved"],
        unknowns=["versions: torch is null (no torch)"],
        output_parsed=True,
    )
    record = RunRecord.model_validate_json(run.model_dump_json())
    assert record.output_parsed is True and "dtype" not in record.model_dump()
    assert record == run
    target = TargetRecord.model_validate_json(
        TargetRecord(name="t", kind="flydsl-pytest", dtype="fp8").model_dump_json()
    )
    assert verdict_and_reasons(record, None, None, target) == verdict_and_reasons(run, None, None, target)


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> dict[str, Path]:
    """One artifact per case, each checked to be the case it is named after."""
    from sandboxes import make_sandbox

    from pytest_gpuverify.simulator import load_state, save_state

    with make_sandbox(tmp_path_factory.mktemp("check") / "host", docker_client) as box:
        sleeper = box.start_sleeper()  # ticket T-1
        sleeper.send_signal(signal.SIGINT)
        sleeper.communicate(timeout=60)
        box.pytest("op_tests/test_gemm_a8w8.py", "op_tests/test_moe_2stage.py", "op_tests/test_crash.py", ticket="T-2")
        box.pytest("op_tests/test_sleep.py", "--gpu-timeout", "2", ticket="T-3")
        box.pytest("op_tests/test_gemm_a8w8.py", "--gpu-container", "none", ticket="T-4")
        state = load_state(box.state_path)
        for i in range(len(state.gpus)):
            state.set_busy(i)
        save_state(state, box.state_path)
        box.pytest("op_tests/test_gemm_a8w8.py", ticket="T-5")
        tickets = box.tickets
    paths = {
        "pass": tickets / "T-2" / "bench_gemm_a8w8.json",
        "fail": tickets / "T-2" / "bench_moe_2stage.json",
        "crash": tickets / "T-2" / "bench_crash.json",
        "timeout": tickets / "T-3" / "bench_sleep.json",
        "host run": tickets / "T-4" / "bench_gemm_a8w8.json",
        "no gpu": tickets / "T-5" / "bench_gemm_a8w8.json",
        "interrupted": tickets / "T-1" / "bench_sleep.json",
    }
    arts = {case: read_artifact(path) for case, path in paths.items()}
    assert arts["pass"].verdict == "PASS" and arts["host run"].verdict == "PASS", arts["pass"].reasons
    assert arts["fail"].verdict == "FAIL" and arts["fail"].exit_code == 0
    # what the run printed failing leads; the exit code follows from it
    crash = arts["crash"].reasons
    assert arts["crash"].verdict == "FAIL" and crash[0].endswith("under /tmp/jit/build failed !!!!!!"), crash
    assert crash[1] == "exit code 1", crash
    assert arts["timeout"].verdict == "INCONCLUSIVE" and arts["timeout"].reasons[0].startswith("timeout")
    assert arts["no gpu"].verdict == "INCONCLUSIVE" and not arts["no gpu"].raw_output
    assert arts["no gpu"].run.ran is False and arts["no gpu"].run.blocked == arts["no gpu"].reasons[:1]
    assert arts["interrupted"].reasons[0].startswith("interrupted")
    assert arts["interrupted"].run.output_parsed is False and arts["interrupted"].raw_output
    return paths


def copy_of(made: dict[str, Path], case: str, tmp_path: Path) -> Path:
    """The case's artifact in a fresh directory, with everything beside it (raw output, JUnit), in a
    folder of its ticket's name (the artifact's key)."""
    here = tmp_path / case.replace(" ", "_") / made[case].parent.name
    shutil.copytree(made[case].parent, here)
    return here / made[case].name


def check(path: Path, capsys) -> tuple[int, list[str], str]:
    """`gpuverify check`'s exit code, its MISMATCH lines (without the word) and its whole output."""
    rc = main(["check", str(path)])
    out = capsys.readouterr().out
    return rc, [line.removeprefix("MISMATCH ") for line in out.splitlines() if line.startswith("MISMATCH ")], out


def as_schema_1(d: dict) -> None:
    """What the engine wrote before the run record: schema 1, without the fields later versions added."""
    from pytest_gpuverify.verify.schemas import _V1_LATER, TOP_FIELDS

    for name in set(d) - TOP_FIELDS[1] - _V1_LATER:
        d.pop(name)
    d["schema_version"] = 1
    env = d.get("env") or {}
    if env.pop("GPUVERIFY_IMPORT_NAMES", None) is not None:  # nor did its command carry the import probe
        env["PYTHONPATH"] = without_probe(env["PYTHONPATH"])


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.docker
@pytest.mark.parametrize("case", ["pass", "fail", "crash", "timeout", "host run", "no gpu", "interrupted"])
def test_an_untouched_artifact_checks_out(made, case, tmp_path, capsys):
    path = copy_of(made, case, tmp_path)
    assert read_artifact(path).run is not None
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches, out
    assert "OK (raw output sha256, numbers, correctness, verdict and reasons match)" in out and PARTLY not in out


# (case, edit, a line `check` must print). Each edit leaves everything else as the engine wrote it.
TAMPERINGS = {
    "verdict edited": ("pass", lambda d: d.update(verdict="FAIL"), "verdict is FAIL, re-derived PASS"),
    "FAIL made PASS": ("fail", lambda d: d.update(verdict="PASS"), "verdict is PASS, re-derived FAIL: "),
    "reason removed": ("fail", lambda d: d["reasons"].pop(0), "reason missing: "),
    "reason added": ("pass", lambda d: d["reasons"].append("looked fine"), "reason extra: looked fine"),
    "reasons reordered": ("crash", lambda d: d["reasons"].reverse(), "reasons: the re-derived ones, in another order"),
    "run.timed_out flipped, verdict left": (
        "pass",
        lambda d: (d["run"].update(timed_out=True), d.update(timed_out=True)),
        "verdict is PASS, re-derived INCONCLUSIVE: timeout",
    ),
    "timed_out cleared in one place": (
        "timeout",
        lambda d: d.update(timed_out=False),
        "timed_out is False, run.timed_out is True",
    ),
    "exit_code edited at the top only": ("pass", lambda d: d.update(exit_code=1), "exit_code is 1, run.exit_code is 0"),
    "exit_code edited in the record only": (
        "pass",
        lambda d: d["run"].update(exit_code=1),
        "exit_code is 0, run.exit_code is 1",
    ),
    "exit_code edited in both places": (
        "crash",
        lambda d: (d["run"].update(exit_code=0), d.update(exit_code=0)),
        "reason extra: exit code 1",
    ),
    "run.container_died set": (
        "pass",
        lambda d: d["run"].update(container_died=True),
        "verdict is PASS, re-derived INCONCLUSIVE: the container stopped during the run",
    ),
    "an unknown dropped from the record": (
        "pass",
        lambda d: d["run"].update(unknowns=[]),
        "reason extra: versions: torch is null",
    ),
    "blocked reasons dropped": (
        "no gpu",
        lambda d: d["run"].update(blocked=[]),
        "reason missing: the command never ran",
    ),
    "never-ran made PASS": (
        "no gpu",
        lambda d: d.update(verdict="PASS"),
        "verdict is PASS, re-derived INCONCLUSIVE: the command never ran: ",
    ),
    "run.ran set with no output": (
        "no gpu",
        lambda d: d["run"].update(ran=True),
        "run.ran is True, but the artifact has no raw output",
    ),
    "target dtype made fp8": (
        "pass",
        lambda d: d["target"].update(dtype="fp8"),
        "verdict is PASS, re-derived INCONCLUSIVE: ",
    ),
    "a threshold added": (
        "pass",
        lambda d: d["target"]["thresholds"].update(snr_db_min=30.0),
        "verdict is PASS, re-derived INCONCLUSIVE: ",
    ),
    "a result claimed from unread output": (
        "interrupted",
        lambda d: d["correctness"].update(passed=True),
        "correctness.passed is True, but no output was read",
    ),
}


@pytest.mark.docker
@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_check_names_each_tampering(made, name, tmp_path, capsys):
    case, change, expected = TAMPERINGS[name]
    path = copy_of(made, case, tmp_path)
    edit(path, change)
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and any(line.startswith(expected) for line in mismatches), (expected, out)


@pytest.mark.docker
def test_reasons_name_what_differs_both_ways(made, tmp_path, capsys):
    path = copy_of(made, "no gpu", tmp_path)
    blocked = read_artifact(path).run.blocked
    edit(path, lambda d: d["run"].update(blocked=[]))
    rc, mismatches, out = check(path, capsys)
    assert (
        rc == 1
        and f"reason extra: {blocked[0]}" in mismatches
        and "reason missing: the command never ran" in mismatches
    ), out


@pytest.mark.docker
@pytest.mark.parametrize("case", ["pass", "no gpu"])
def test_an_old_artifact_passes_with_a_partial_check_line(made, case, tmp_path, capsys):
    path = copy_of(made, case, tmp_path)
    edit(path, as_schema_1)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches and out.count(PARTLY) == 1, out


@pytest.mark.docker
def test_an_old_artifact_keeps_the_loose_verdict_check(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    edit(path, lambda d: (as_schema_1(d), d.update(verdict="FAIL")))
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and mismatches == ["verdict FAIL, but the raw output shows no failure and the exit code was 0"], out
    assert out.count(PARTLY) == 1


# `check` cannot be talked round. test_check_tamper.py has the rest (provenance, signatures).
@pytest.mark.docker
def test_a_schema_2_artifact_without_its_run_record_is_an_error(made, tmp_path, capsys):
    path = copy_of(made, "crash", tmp_path)
    edit(path, lambda d: (d.pop("run"), d.update(verdict="PASS", reasons=[], exit_code=0)))  # a crash made PASS
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and any(m.startswith("schema: field run is missing (schema ") for m in mismatches), out


def test_a_topic_and_a_time_are_not_an_artifact(tmp_path, capsys):
    path = tmp_path / "bench_x.json"
    path.write_text('{"topic": "x", "ts": "2026-01-01T00:00:00Z"}')
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and mismatches and "OK" not in out, out


@pytest.mark.docker
def test_exit_code_and_verdict_and_reasons_forged_together_are_caught_by_the_trailer(made, tmp_path, capsys):
    """The strongest edit of the artifact alone: exit code, verdict and reasons all as check would re-derive
    them. Only the log's trailer (written by the engine) still says 1."""
    from pytest_gpuverify.engine.verdict import verdict_and_reasons
    from pytest_gpuverify.parsers.reader import parse_output
    from pytest_gpuverify.parsers.result import ParseContext
    from pytest_gpuverify.records.artifact import RunRecord, TargetRecord

    path = copy_of(made, "crash", tmp_path)
    data = json.loads(path.read_text())
    data["run"]["exit_code"] = data["exit_code"] = 0
    target = TargetRecord.model_validate(data["target"])
    parsed = parse_output(target.kind, path.parent / data["raw_output"], ParseContext(exit_code=0))
    data["verdict"], data["reasons"] = verdict_and_reasons(RunRecord.model_validate(data["run"]), parsed, None, target)
    path.write_text(json.dumps(data))
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and mismatches == ["run.exit_code is 0, the raw output's trailer says 1"], out
