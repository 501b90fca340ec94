"""--gpu-trace kernels on the simulated host: one extra run of the target under the simulated rocprofv3
(rocpd SQLite), stored beside the raw log and hashed; a harness that divides its measured time by 10
(a planted timer patch) is INCONCLUSIVE with the trace and passes without it; `gpuverify check` re-derives
the trace's reasons and verifies its hash."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
from kernel_repos import commit, out
from traced_lab import write_config

pytestmark = pytest.mark.docker

DECLARATION = """
[[targets]]
name = "traced"
kind = "bench"
command = "python3 bench/bench_traced.py"
topic = "traced"
"""


def gv(*args):
    return subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", *args], capture_output=True, text=True)


def traced_session(sandbox, *extra: str, divisor: float = 1.0, variant: str = "v1"):
    write_config(sandbox.repo, divisor=divisor, variant=variant)
    (sandbox.repo / "gpuverify.toml").write_text(DECLARATION)
    if subprocess.run(["git", "-C", str(sandbox.repo), "status", "--porcelain"], capture_output=True).stdout:
        commit(sandbox.repo, f"traced divisor {divisor}")
    proc = sandbox.pytest("--gpu-target", "traced", "--gpu-container", "none", *extra)
    return proc, sandbox.artifact("traced")


def test_a_timer_patch_is_caught_by_the_trace_and_only_by_it(sandbox):
    path = str(sandbox.tickets / "T-1" / "bench_traced.json")

    proc, honest = traced_session(sandbox, "--gpu-trace", "kernels", "--gpu-profiler", "ncu")
    assert honest.verdict == "PASS", (honest.reasons, honest.notes, out(proc)[-3000:])
    [trace, ncu] = honest.profiles
    # a profiler that is not installed is one line, never a reason
    assert (ncu.tool, ncu.purpose, ncu.path) == ("ncu", "profile", None)
    assert ncu.problem == "ncu is not installed where the command runs. Fix: install it, or drop --gpu-profiler"
    assert (trace.tool, trace.format, trace.purpose, trace.exit_code, trace.problem) == (
        "rocprofv3",
        "rocpd",
        "trace",
        0,
        None,
    )
    assert trace.path == honest.raw_output.replace(".log", ".trace.rocpd.db")  # beside the log, named like it
    assert trace.version.startswith("rocprofv3") and len(trace.sha256) == 64
    gemm = [k for k in honest.kernels if k.name == "gemm_kernel"]
    assert [(k.grid, k.launches, k.rows) for k in gemm] == [
        ([512, 64, 1], 51, ["m=128, n=4096, k=4096 us"]),
        ([1024, 64, 1], 51, ["m=256, n=4096, k=4096 us"]),
        ([2048, 128, 1], 51, ["m=512, n=8192, k=4096 us"]),
    ]
    assert all(len(k.code_objects) == 1 for k in gemm)  # the Triton cache's hsaco, by name
    assert gv("check", path).returncode == 0, gv("check", path).stdout

    proc, patched = traced_session(sandbox, "--gpu-trace", "kernels", divisor=10.0)
    assert patched.verdict == "INCONCLUSIVE", out(proc)[-3000:]
    assert patched.run.trace_doubts and patched.run.trace_doubts == [
        r for r in patched.reasons if "the trace's kernels took" in r
    ]
    assert "m=128, n=4096, k=4096 us: printed 0.0102 ms, the trace's kernels took 0.1 ms a call" in patched.reasons[0]
    check = gv("check", path)
    assert check.returncode == 0, check.stdout + check.stderr

    # the trace's reasons are re-derived: an artifact that drops them (and passes itself) is caught
    doc = json.loads(pathlib.Path(path).read_text())
    doc["run"]["trace_doubts"], doc["reasons"], doc["verdict"] = [], [], "PASS"
    forged = sandbox.tickets / "T-1" / "forged" / "bench_traced.json"
    forged.parent.mkdir()
    for name in (patched.raw_output, patched.profiles[0].path):
        (forged.parent / name).write_bytes((sandbox.tickets / "T-1" / name).read_bytes())
    forged.write_text(json.dumps(doc))
    said = gv("check", str(forged)).stdout
    assert 'run.trace_doubts say [], the stored trace and the raw output give ["m=128, n=4096, k=4096 us' in said, said

    # the stored trace is evidence: an edited one no longer matches its hash
    trace_file = sandbox.tickets / "T-1" / patched.profiles[0].path
    trace_file.chmod(0o644)
    with open(trace_file, "ab") as fh:
        fh.write(b"\0")
    check = gv("check", path)
    assert check.returncode != 0 and "trace " + patched.profiles[0].path + " sha256 is" in check.stdout, check.stdout

    # without the trace the patch goes through: the point. A profile is no trace: it judges nothing
    proc, unseen = traced_session(sandbox, "--gpu-profiler", "rocprofv3", "--gpu-profiler-filter", "gemm", divisor=10.0)
    assert unseen.verdict == "PASS" and unseen.run.trace_doubts == [], out(proc)[-2000:]
    [profile] = unseen.profiles
    assert (profile.tool, profile.purpose, profile.format, profile.kernel_filter, profile.problem) == (
        "rocprofv3",
        "profile",
        "rocpd",
        "gemm",
        None,
    )
    assert profile.path.endswith(".profile.rocpd.db") and unseen.kernels == []
    assert gv("check", path).returncode == 0
    report = sandbox.root / "report.html"
    gv("report", str(sandbox.tickets / "T-1"), "-o", str(report))
    assert f'<a href="tickets/T-1/{profile.path}">{profile.path}</a>' in report.read_text()

    # a trace run that fails is one reason; the timed result is still written and checks
    state = json.loads(sandbox.state_path.read_text())
    state["faults"] = {"rocprofv3": "fail"}
    sandbox.state_path.write_text(json.dumps(state))
    proc, failed = traced_session(sandbox, "--gpu-trace", "kernels")
    assert failed.verdict == "INCONCLUSIVE", out(proc)[-2000:]
    assert failed.reasons[0] == (
        "--gpu-trace: the trace run under rocprofv3 exited with 1: "
        "rocprofv3: error: rocprofiler_configure failed: the tool library could not be loaded"
    )
    assert len(failed.perf) == 3 and failed.profiles[0].path is None and failed.kernels == []
    assert gv("check", path).returncode == 0
