"""The run and `gpuverify doctor` read repo state by one rule: the simulated host, a real container."""

from __future__ import annotations

import pytest
from doctor_cmd import doctor, last

pytestmark = pytest.mark.docker


def test_run_and_doctor_agree_on_an_edited_harness(sandbox):
    """An uncommitted edit to a tracked bench_*.py: the run is INCONCLUSIVE naming it, doctor says DIRTY."""
    (sandbox.repo / "bench" / "bench_softmax.py").write_text("print('edited')\n")
    sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and art.repos[0].dirty is True, art.reasons
    assert art.repos[0].dirty_paths == ["bench/bench_softmax.py"] and "bench/bench_softmax.py" in art.reasons[0]
    code, out = doctor(sandbox)
    assert code == 1 and "repo aiter is dirty (1 paths)" in last(out) and " M bench/bench_softmax.py" in out


def test_artifacts_in_a_tickets_folder_inside_the_repo_leave_it_clean(sandbox):
    sandbox.rewrite_env(tickets=sandbox.repo / "tickets")
    sandbox.pytest("op_tests/test_gemm_a8w8.py")
    sandbox.pytest("op_tests/test_gemm_a8w8.py")  # the first run's artifact and log lie in the repo now
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS" and art.repos[0].dirty is False, art.reasons
    code, out = doctor(sandbox)
    assert "repo aiter:" in out and "clean" in out and "dirty" not in last(out), out
