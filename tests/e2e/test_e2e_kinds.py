"""Every target kind and every container source, end to end in real containers.

The declarations are the ones in conftest_examples/, copied into the demo repos."""

from __future__ import annotations

import json
import uuid

import pytest
from kernel_repos import commit, declare, out, run_in
from probe_paths import without_probe

from pytest_gpuverify.cli import demo

pytestmark = pytest.mark.docker


def test_aiter_declared_target_with_args_and_regime(sandbox):
    declare(sandbox.repo, "aiter")
    proc = sandbox.pytest("--gpu-target", "gemm-a8w8-bf16")
    art = sandbox.artifact("gemm-a8w8-bf16")
    assert art.verdict == "PASS", out(proc)
    assert art.command == "python3 op_tests/test_gemm_a8w8.py -d bf16"
    assert art.target.args == ["-d", "bf16"] and art.target.regime == "cold-L2"
    assert {r.regime for r in art.perf} == {"cold-L2"}
    assert not (sandbox.tickets / "T-1" / "bench_rmsnorm2d.json").exists(), "only the selected target runs"


def test_command_line_args(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-args=-d bf16 -m 128", "--gpu-topic", "gemm")
    art = sandbox.artifact("gemm")
    assert art.verdict == "PASS", out(proc)
    assert art.command == "python3 op_tests/test_gemm_a8w8.py -d bf16 -m 128"


def test_unknown_declared_target_is_a_usage_error(sandbox):
    declare(sandbox.repo, "aiter")
    proc = sandbox.pytest("--gpu-target", "nope")
    assert proc.returncode == 4 and "gemm-a8w8-bf16" in out(proc)


def test_flydsl_pytest_file(sandbox, flydsl):
    declare(flydsl, "flydsl")
    proc = run_in(sandbox, flydsl, "--gpu-target", "rmsnorm")
    art = sandbox.artifact("rmsnorm")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert art.imports["flydsl"] == "/workspace/FlyDSL/python/flydsl/__init__.py"
    assert (
        without_probe(art.env["PYTHONPATH"]) == "/workspace/FlyDSL/python:/workspace/FlyDSL/build-fly/python_packages"
    )
    assert art.command.startswith("python3 -m pytest tests/kernels/test_rmsnorm.py -q")
    assert art.correctness.shapes_checked == 3 and art.correctness.checks_failed == 0
    assert art.correctness.max_abs_error == pytest.approx(2e-3)
    assert art.junit_xml and (sandbox.tickets / "T-1" / art.junit_xml).exists()
    assert any(r.name and r.us_median for r in art.perf)
    assert {r.regime for r in art.perf} == {"warm"}


def test_flydsl_run_with_no_test_is_inconclusive_despite_exit_0(sandbox, flydsl):
    proc = run_in(sandbox, flydsl, "tests/kernels/test_all_skipped.py")
    art = sandbox.artifact("all_skipped")
    assert art.exit_code == 0, out(proc)
    assert art.verdict == "INCONCLUSIVE" and any("no test" in r for r in art.reasons), art.reasons


HOST_HOSTILE_CONFTEST = """
import os
# As a kernel repo's conftest that imports torch: there is torch in the container, none on the host.
if not os.environ.get("HIP_VISIBLE_DEVICES"):
    raise ImportError("No module named 'torch'")
"""


def test_a_kernel_repos_conftest_stays_in_the_container(sandbox, flydsl):
    (flydsl / "tests" / "kernels" / "conftest.py").write_text(HOST_HOSTILE_CONFTEST)
    commit(flydsl, "a conftest that needs torch")
    proc = run_in(sandbox, flydsl, "tests/kernels/test_rmsnorm.py")
    assert (sandbox.tickets / "T-1" / "bench_rmsnorm.json").exists(), out(proc)
    art = sandbox.artifact("rmsnorm")
    assert art.verdict == "PASS", out(proc)  # the inner pytest imported it, with HIP_VISIBLE_DEVICES set
    assert "conftest.py files of repo FlyDSL are not imported here" in out(proc)
    proc = run_in(sandbox, flydsl, "tests/kernels/test_rmsnorm.py", "--gpu-host-conftest", ticket="T-2")
    assert proc.returncode == 4 and "No module named 'torch'" in out(proc), out(proc)
    assert not (sandbox.tickets / "T-2").exists()


def test_a_session_outside_the_kernel_repos_keeps_its_conftest(sandbox, tmp_path):
    suite = tmp_path / "ci-suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef shape():\n    return 128\n")
    (suite / "test_uses_it.py").write_text("def test_shape(shape):\n    assert shape == 128\n")
    proc = run_in(sandbox, suite, "test_uses_it.py")
    assert proc.returncode == 0 and "1 passed" in out(proc), out(proc)
    assert "are not imported here" not in out(proc)


def test_flydsl_failing_case_fails(sandbox, flydsl):
    proc = run_in(sandbox, flydsl, "tests/kernels/test_layernorm_fail.py")
    art = sandbox.artifact("layernorm_fail")
    assert art.verdict == "FAIL", out(proc)
    assert any("test_layernorm[2048]" in r for r in art.reasons), art.reasons


def test_triton_in_aiter(sandbox):
    demo.install_pytest(sandbox.client, sandbox.container)
    declare(sandbox.repo, "triton_in_aiter")
    proc = sandbox.pytest("--gpu-target", "triton-softmax", "op_tests/triton_tests/test_triton_mismatch.py")
    ok = sandbox.artifact("triton-softmax")
    assert ok.verdict == "PASS", (ok.reasons, out(proc))
    assert ok.correctness.cosine_sim is not None and ok.correctness.cosine_sim >= 0.999
    assert ok.imports["aiter"] == "/workspace/aiter/aiter/__init__.py"
    bad = sandbox.artifact("triton_mismatch")
    assert bad.verdict == "FAIL" and any("Mismatched elements: 2069 / 524288" in r for r in bad.reasons), bad.reasons


def test_bench_harness_perf_report_and_ab_sides(sandbox):
    declare(sandbox.repo, "bench_harness")
    proc = sandbox.pytest("gpuverify.toml")
    report = sandbox.artifact("softmax-perf-report")
    assert report.verdict == "PASS", (report.reasons, out(proc))
    assert report.command == "python3 bench/bench_softmax.py"
    assert len(report.perf) >= 6 and report.correctness.max_abs_error == pytest.approx(0.000244)
    ab = sandbox.artifact("hillclimb-ab")
    assert ab.verdict == "PASS", ab.reasons
    assert {r.side for r in ab.perf} == {"A", "B"} and len(ab.perf) == 4


def test_devcontainer_names_the_container_and_its_mount(sandbox):
    name = f"gv-dev-{uuid.uuid4().hex[:8]}"
    sandbox.start_container(name, mounts={str(sandbox.repo): "/ws/aiter"})
    sandbox.rewrite_env(containers=[*sandbox.spec.containers, (name, demo.ROOTFS_IMAGE)])
    dev = sandbox.tickets / "T-1" / ".devcontainer"
    dev.mkdir(parents=True)
    (dev / "devcontainer.json").write_text(
        json.dumps(
            {
                "runArgs": [f"--name={name}", "--device=/dev/kfd"],
                "workspaceMount": f"source={sandbox.repo},target=/ws/aiter,type=bind",
                "workspaceFolder": "/ws/aiter",
            }
        ).replace("{", "{ // the ticket's container\n", 1)
    )
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert (
        art.container == name and art.workdir == "/ws/aiter" and art.imports["aiter"] == "/ws/aiter/aiter/__init__.py"
    )


def test_running_container_matched_by_ticket_key(sandbox):
    name = f"aiter-T-1-{uuid.uuid4().hex[:6]}"
    sandbox.start_container(name)
    sandbox.rewrite_env(
        repo_rows=[("aiter", sandbox.repo, None, "/workspace/aiter")],
        containers=[(name, "rocm/pytorch:other"), (sandbox.container, "rocm/pytorch:other2")],
    )
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert art.container == name


def test_two_matches_are_ambiguous_never_a_guess(sandbox):
    a, b = (f"aiter-T-1-{x}-{uuid.uuid4().hex[:6]}" for x in "ab")
    sandbox.start_container(a)
    sandbox.start_container(b)
    sandbox.rewrite_env(
        repo_rows=[("aiter", sandbox.repo, None, "/workspace/aiter")], containers=[(a, "x:1"), (b, "x:2")]
    )
    sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and a in art.reasons[0] and b in art.reasons[0]
    assert sandbox.exec_ids(a) == [] and sandbox.exec_ids(b) == []


def test_stopped_container_started_only_with_consent(sandbox):
    c = sandbox.client.containers.get(sandbox.container)
    c.stop(timeout=1)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-start-container")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, out(proc))
    assert any("--gpu-start-container" in n for n in art.notes)
