"""Every word of the printout on artifacts the engine writes (a real session, a real container), and
``gpuverify check`` re-deriving each new rule: the default verdict lines, the alarm scan of every
kind (an assert_close block a harness caught, an exception in a pytest worker thread), perf_report
tables keyed by their title, an assert-only script whose exit status is its check, an inner pytest
that ran no test, and retries: pytest-rerunfailures inside the container and around the session."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.records.artifact import read_artifact

pytestmark = pytest.mark.docker

MOE_HARNESS = """\
# a fused-MoE comparison harness: a passing figure, then a failed allclose
print("Cosine similarity: 0.999060")
print("Allclose(atol=0.1, rtol=0.2): False")
"""
CAUGHT_CLOSE = """\
# a harness that catches assert_close's error and prints it, after a passed check
print("[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 passed~]")
try:
    raise AssertionError("Tensor-likes are not close!\\n\\nMismatched elements: 1024 / 1024 (100.0%)\\n"
                         "Greatest absolute difference: 0.5 at index (3, 17) (up to 1e-05 allowed)")
except AssertionError as exc:
    print(exc)
"""
ASSERT_ONLY = """\
import sys
# a Triton tutorial: asserts, and one printed difference
diff = 0.0 if "--wrong" not in sys.argv else 0.5
print(f"The maximum difference between torch and triton is {diff}")
assert diff == 0.0, "triton and torch differ"
"""
PERF_REPORT = """\
# two perf_report tables of one run (Triton's 03-matrix-multiplication), a whole number in a kernel column
print("\\u2705 Triton and Torch match")
for dtype, values in (("fp16", ("1024.000000", "4.096000")), ("fp8", ("3.276800", "9.830400"))):
    print(f"matmul-performance-{dtype}:")
    print("         M       N       K      Triton")
    print(f"0    256.0   256.0   256.0 {values[0]:>11}")
    print(f"1    384.0   384.0   384.0 {values[1]:>11}")
"""
THREAD_TEST = """\
import threading

def test_in_a_worker_thread():
    def work():
        raise AssertionError("Tensor-likes are not close!\\n\\nMismatched elements: 1024 / 1024 (100.0%)")
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
"""
NO_TORCH_CONFTEST = "import torch_is_not_here  # the container has no such module\n"
FLAKY_TEST = """\
ATTEMPTS = []

def test_retried():
    ATTEMPTS.append(1)
    if len(ATTEMPTS) == 1:
        raise AssertionError("Tensor-likes are not close!\\n\\nMismatched elements: 256 / 256 (100.0%)")

def test_steady():
    pass
"""
DECLARATIONS = """\
[[targets]]
name = "moe-harness"
kind = "bench"
command = "python3 bench/moe_harness.py"

[[targets]]
name = "caught-close"
kind = "bench"
command = "python3 bench/caught_close.py"

[[targets]]
name = "assert-only"
kind = "bench"
command = "python3 bench/assert_only.py"
exit_status_is_check = true

[[targets]]
name = "assert-only-wrong"
kind = "bench"
command = "python3 bench/assert_only.py --wrong"
exit_status_is_check = true

[[targets]]
name = "perf-report"
kind = "bench"
command = "python3 bench/perf_report.py"

[[targets]]
name = "perf-report-mark-off"
kind = "bench"
command = "python3 bench/perf_report.py"
verdict_lines_off = ["check-mark"]

[[targets]]
name = "thread"
kind = "pytest"
path = "tests/thread/test_thread.py"

[[targets]]
name = "no-torch"
kind = "pytest"
path = "tests/notorch/test_x.py"

[[targets]]
name = "retried"
kind = "pytest"
path = "tests/flaky/test_flaky.py"
"""
FILES = {
    "bench/moe_harness.py": MOE_HARNESS,
    "bench/caught_close.py": CAUGHT_CLOSE,
    "bench/assert_only.py": ASSERT_ONLY,
    "bench/perf_report.py": PERF_REPORT,
    "tests/thread/test_thread.py": THREAD_TEST,
    "tests/notorch/conftest.py": NO_TORCH_CONFTEST,
    "tests/notorch/test_x.py": "def test_x():\n    pass\n",
    "tests/flaky/test_flaky.py": FLAKY_TEST,
    "tests/flaky/pytest.ini": "[pytest]\naddopts = --reruns 2\n",
    "gpuverify.toml": DECLARATIONS,
}


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> Path:
    """Every target above, run once by the engine; the ticket directory it wrote."""
    from kernel_repos import commit
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path_factory.mktemp("printout") / "host", docker_client) as box:
        demo.install_pytest(box.client, box.container, extra=("pytest-rerunfailures",))
        for rel, text in FILES.items():
            (box.repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (box.repo / rel).write_text(text, encoding="utf-8")
        commit(box.repo, "printout targets")
        proc = box.pytest("gpuverify.toml", ticket="P-1")
        assert (box.tickets / "P-1" / "bench_moe-harness.json").exists(), proc.stdout.decode()[-3000:]
        return box.tickets / "P-1"


def art(made: Path, topic: str):
    return read_artifact(made / f"bench_{topic}.json")


def rule_reasons(a) -> list[str]:
    """The reasons besides the facts recorded as null (the sandbox has no torch: versions)."""
    return [r for r in a.reasons if r not in a.run.unknowns]


def test_a_printed_failure_outranks_a_passing_figure(made):
    a = art(made, "moe-harness")
    assert a.verdict == "FAIL" and a.exit_code == 0 and a.correctness.cosine_sim == 0.99906
    assert rule_reasons(a) == ["line 2: a failure verdict line (allclose): Allclose(atol=0.1, rtol=0.2): False"]


def test_a_caught_assert_close_error_fails(made):
    a = art(made, "caught-close")
    assert a.verdict == "FAIL" and a.exit_code == 0, a.reasons
    assert rule_reasons(a) == [
        "line 2: assert_close failed: Tensor-likes are not close!; Mismatched elements: "
        "1024 / 1024 (100.0%); Greatest absolute difference: 0.5 at index (3, 17) (up to 1e-05 "
        "allowed)"
    ]


def test_an_assert_only_script_is_checked_by_its_exit_status(made):
    a = art(made, "assert-only")
    assert a.verdict == "PASS" and a.target.exit_status_is_check is True, a.reasons
    # two checks of the one shape: the printed difference of 0, and the exit status that asserted it
    assert (a.correctness.shapes_checked, a.correctness.checks_passed, a.correctness.max_abs_error) == (1, 2, 0.0)
    assert any("exit status 0 counted as a check of the shapes the output printed" in n for n in a.notes), a.notes
    wrong = art(made, "assert-only-wrong")
    # the assertion's message ("triton and torch differ") is a failed check; the exit status no pass
    assert wrong.verdict == "FAIL" and wrong.exit_code == 1 and wrong.correctness.checks_passed == 0
    assert wrong.correctness.checks_failed == 1 and wrong.correctness.max_abs_error == 0.5
    assert not any("exit status 0 counted" in n for n in wrong.notes)


def test_perf_report_tables_keep_their_title_and_their_kernels_figures(made):
    a = art(made, "perf-report")
    assert a.verdict == "PASS", a.reasons
    assert [(r.table, r.shape, r.name, r.metrics) for r in a.perf] == [
        ("matmul-performance-fp16", "M=256.0, N=256.0, K=256.0", "Triton", {"Triton": 1024.0}),
        ("matmul-performance-fp16", "M=384.0, N=384.0, K=384.0", "Triton", {"Triton": 4.096}),
        ("matmul-performance-fp8", "M=256.0, N=256.0, K=256.0", "Triton", {"Triton": 3.2768}),
        ("matmul-performance-fp8", "M=384.0, N=384.0, K=384.0", "Triton", {"Triton": 9.8304}),
    ]
    off = art(made, "perf-report-mark-off")
    assert off.verdict == "INCONCLUSIVE" and off.target.verdict_lines_off == ["check-mark"]


def test_an_exception_in_a_pytest_worker_thread_fails(made):
    a = art(made, "thread")
    assert a.verdict == "FAIL" and a.exit_code == 0, a.reasons
    reasons = rule_reasons(a)
    assert any(
        "assert_close failed: Tensor-likes are not close!; Mismatched elements: 1024 / 1024" in r for r in reasons
    )
    assert any(
        "pytest caught an exception no test saw" in r and "PytestUnhandledThreadExceptionWarning" in r for r in reasons
    ), reasons


def test_an_inner_pytest_that_ran_no_test_is_inconclusive_naming_its_first_error(made):
    a = art(made, "no-torch")
    assert a.verdict == "INCONCLUSIVE" and a.exit_code == 4, a.reasons
    assert a.reasons[0] == (
        "the inner pytest ran no test (exit code 4): line 1: ImportError while loading conftest "
        "'/workspace/aiter/tests/notorch/conftest.py'."
    )


def test_a_test_the_inner_pytest_retried_into_a_pass_fails_and_counts_once(made):
    a = art(made, "retried")
    assert a.exit_code == 0 and a.verdict == "FAIL", a.reasons
    # the node id is relative to the rootdir, tests/flaky (its pytest.ini)
    assert rule_reasons(a)[0].startswith("test_flaky.py::test_retried failed an attempt and ran again")
    assert (a.correctness.shapes_checked, a.correctness.checks_passed, a.correctness.checks_failed) == (2, 1, 1)
    assert a.command.startswith("python3 -m pytest tests/flaky/test_flaky.py -q -rAR ")


TOPICS = [
    "moe-harness",
    "caught-close",
    "assert-only",
    "assert-only-wrong",
    "perf-report",
    "perf-report-mark-off",
    "thread",
    "no-torch",
    "retried",
]


def check(path: Path, capsys) -> tuple[int, str]:
    rc = main(["check", str(path)])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize("topic", TOPICS)
def test_check_re_derives_every_new_rule(made, topic, capsys):
    rc, text = check(made / f"bench_{topic}.json", capsys)
    assert rc == 0 and "MISMATCH" not in text, text


TAMPERINGS = {
    "a failure verdict line's target called PASS": (
        "moe-harness",
        lambda d: d.update(verdict="PASS"),
        "verdict is PASS, re-derived FAIL: ",
    ),
    "the verdict line turned off after the fact": (
        "moe-harness",
        lambda d: d["target"].update(verdict_lines_off=["allclose"]),
        "verdict is FAIL, re-derived INCONCLUSIVE",
    ),
    "exit_status_is_check dropped": (
        "assert-only",
        lambda d: d["target"].update(exit_status_is_check=False),
        "correctness.checks_passed is 2, the raw output gives 1",
    ),
    "a perf row's table renamed": (
        "perf-report",
        lambda d: d["perf"][2].update(table="matmul-performance-fp16"),
        "perf row 2 (M=256.0, N=256.0, K=256.0 Triton): table is 'matmul-performance-fp16', "
        "the raw output gives 'matmul-performance-fp8'",
    ),
    "a kernel's figure moved into the shape": (
        "perf-report",
        lambda d: d["perf"][0].update(shape="M=256.0, N=256.0, K=256.0, Triton=1024.000000"),
        "perf row 0 (M=256.0, N=256.0, K=256.0 Triton): shape is",
    ),
    "the thread's failure dropped": (
        "thread",
        lambda d: d.update(verdict="PASS", reasons=[]),
        "verdict is PASS, re-derived FAIL: ",
    ),
    "a run that ran no test called FAIL": (
        "no-torch",
        lambda d: d.update(verdict="FAIL"),
        "verdict is FAIL, re-derived INCONCLUSIVE: ",
    ),
    "a retried test counted as passed": (
        "retried",
        lambda d: d["correctness"].update(checks_passed=2, checks_failed=0),
        "correctness.checks_passed is 2, the raw output gives 1",
    ),
}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_check_catches_tampering_with_the_new_rules(made, name, tmp_path, capsys):
    topic, change, expected = TAMPERINGS[name]
    here = tmp_path / "copy"
    shutil.copytree(made, here)
    path = here / f"bench_{topic}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    rc, text = check(path, capsys)
    assert rc == 1 and any(line.removeprefix("MISMATCH ").startswith(expected) for line in text.splitlines()), (
        expected,
        text,
    )


# ----- around the session: a rerun plugin never re-runs a GPU target into another verdict --------------


def test_a_rerun_plugin_around_the_session_keeps_the_first_verdict(sandbox):
    """``pytest --gpu-verify --reruns 2`` on a target that fails: it runs once, the session fails."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        "-p",
        "no:hypothesispytest",
        "--gpu-verify",
        "--gpu-window",
        "0.3",
        "--gpu-env",
        str(sandbox.env_path),
        "--ticket",
        "T-1",
        "--reruns",
        "2",
        "-rA",
        "op_tests/test_moe_2stage.py",
    ]
    proc = subprocess.run(
        cmd,
        cwd=sandbox.repo,
        capture_output=True,
        timeout=300,
        env=dict(os.environ, PATH=f"{sandbox.sim_bin}:{os.environ['PATH']}"),
    )
    text = proc.stdout.decode(errors="replace")
    assert proc.returncode == 1, text[-3000:]
    assert "1 failed, 2 rerun" in text and " passed" not in text.splitlines()[-1], text[-2000:]
    assert "a GPU target runs once, its first verdict stands" in text
    written = sorted(p.name for p in (sandbox.tickets / "T-1").glob("bench_*.json"))
    assert written == ["bench_moe_2stage.json"], written  # one run: no bench_moe_2stage-2.json of a second one
    assert read_artifact(sandbox.tickets / "T-1" / "bench_moe_2stage.json").verdict == "FAIL"
    summary = [line for line in text.splitlines() if re.match(r"FAIL +\S*op_tests/test_moe_2stage.py::", line)]
    assert len(summary) == 1, text[-2000:]  # the gpuverify section: one line for the target, not one per call
