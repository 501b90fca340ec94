"""`pytest --gpu-verify` end to end: real pytest subprocess, real container, real locks, simulated GPUs."""

from __future__ import annotations

import re
import subprocess

import pytest
from probe_paths import without_probe

from pytest_gpuverify.records.artifact import sha256_file

pytestmark = pytest.mark.docker


def out(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def test_one_session_many_verdicts(sandbox):
    proc = sandbox.pytest(
        "op_tests/test_gemm_a8w8.py",
        "op_tests/test_rmsnorm2d.py",
        "op_tests/test_moe_2stage.py",
        "op_tests/test_crash.py",
        "op_tests/test_no_check.py",
    )
    text = out(proc)
    assert proc.returncode == 1, text

    gemm = sandbox.artifact("gemm_a8w8")
    assert gemm.verdict == "PASS", gemm.reasons
    assert gemm.key == "T-1" and gemm.container == sandbox.container and gemm.image
    assert gemm.gpu.arch == "gfx942" and gemm.gpu.index is not None
    assert gemm.imports["aiter"] == "/workspace/aiter/aiter/__init__.py"
    assert gemm.repos[0].sha and gemm.repos[0].dirty is False
    assert gemm.command == "python3 op_tests/test_gemm_a8w8.py" and gemm.exit_code == 0
    # the sandbox container has no torch: null, with the reason, never a guess
    assert gemm.versions.torch is None and any(r.startswith("versions: torch is null") for r in gemm.reasons)
    assert gemm.versions.python and gemm.versions.python.startswith("3.")
    assert gemm.correctness.passed is True and gemm.correctness.shapes_checked == 3
    # perf rows equal the printed numbers, one per provider
    raw = (sandbox.tickets / "T-1" / gemm.raw_output).read_text()
    row = r"^\| torch\.bfloat16 \|\s+\d+ \|\s+\d+ \|\s+\d+ \|\s+([\d.]+) \|\s+\S+ \|\s+([\d.]+)"
    printed = [float(x) for x in re.findall(row, raw, re.M) for x in x]
    assert sorted(r.us_median for r in gemm.perf) == sorted(printed) and len(printed) == 6
    assert {r.name for r in gemm.perf} == {"ck us", "triton us"}
    assert gemm.raw_output_sha256 == sha256_file(sandbox.tickets / "T-1" / gemm.raw_output)
    # the environment the command saw
    env_line = next(line for line in raw.splitlines() if line.startswith("[gv-env]"))
    assert f"HIP_VISIBLE_DEVICES={gemm.gpu.index} " in env_line
    # the worktree first, the import probe's folder last (it records where aiter was imported from)
    pythonpath = re.search(r"PYTHONPATH=(\S+) ", env_line).group(1)
    assert without_probe(pythonpath) == "/workspace/aiter" and "COLUMNS=10000" in env_line
    assert gemm.env["PYTHONPATH"] == pythonpath
    assert "PYTHONUNBUFFERED=1" in env_line and "GPU_ARCHS=gfx942" in env_line
    assert "AITER_JIT_DIR=/tmp/gpuverify/cache/" in env_line and env_line.endswith("cwd=/workspace/aiter")

    assert sandbox.artifact("rmsnorm2d").verdict == "PASS"
    moe = sandbox.artifact("moe_2stage")
    assert moe.verdict == "FAIL" and moe.exit_code == 0, "aiter op_tests exit 0 after a failed check"
    assert any("failed" in r for r in moe.reasons)
    crash = sandbox.artifact("crash")
    assert crash.verdict == "FAIL" and crash.exit_code == 1 and "exit code 1" in crash.reasons
    nocheck = sandbox.artifact("no_check")
    assert nocheck.verdict == "INCONCLUSIVE" and any("no readable correctness" in r for r in nocheck.reasons)
    assert nocheck.perf, "perf rows next to an unchecked result are kept"

    # terminal summary: one line per target, and INCONCLUSIVE has its own status
    assert "gpuverify" in text and text.count("-> ") >= 5
    assert re.search(r"1 inconclusive", text), text
    assert sandbox.lock_files_free()


def test_all_pass_exits_zero(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "op_tests/test_rmsnorm2d.py")
    assert proc.returncode == 0, out(proc)


def test_no_idle_gpu_is_no_gpu_and_never_runs(sandbox):
    from pytest_gpuverify.simulator import load_state, save_state

    state = load_state(sandbox.state_path)
    for gpu in state.gpus:
        gpu.use_pct = 97
    save_state(state, sandbox.state_path)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert proc.returncode == 1
    assert art.verdict == "INCONCLUSIVE" and art.reasons[0].startswith("NO_GPU"), art.reasons
    assert art.raw_output is None and art.exit_code is None, "the command never ran"
    assert "busy" in art.reasons[0]
    # only the arch, versions and import checks ran in the container, not the target
    execs = sandbox.exec_ids()
    assert len(execs) == 3 and not any("test_gemm_a8w8" in e for e in execs), execs


def test_gpu_held_by_foreign_flock_is_skipped(sandbox):
    holders = [
        subprocess.Popen(["flock", "-x", "-o", str(sandbox.spec.locks / f"gpu-{i}.lock"), "sleep", "30"])
        for i in (0, 1, 2)
    ]
    try:
        import time

        time.sleep(0.3)
        proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
        art = sandbox.artifact("gemm_a8w8")
        assert art.verdict == "PASS", out(proc)
        assert art.gpu.index == 3
    finally:
        for h in holders:
            h.kill()
            h.wait()


def test_import_from_another_checkout_is_inconclusive(sandbox):
    # the container has another aiter on its user site; the worktree has none
    subprocess.run(["git", "-C", str(sandbox.repo), "rm", "-rq", "aiter"], check=True)
    subprocess.run(
        ["git", "-C", str(sandbox.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "no aiter"],
        check=True,
    )
    c = sandbox.client.containers.get(sandbox.container)
    site = "/root/.local/lib/python3.11/site-packages/aiter"
    assert c.exec_run(["sh", "-c", f"mkdir -p {site} && touch {site}/__init__.py"]).exit_code == 0
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE", out(proc)
    assert art.imports["aiter"] == f"{site}/__init__.py"
    # the command ran: its own record of its imports, not the prediction alone, refuses it
    assert art.reasons[0] == (
        f"aiter was imported from {site}/__init__.py, outside the worktree /workspace/aiter/, "
        "not from the worktree, which holds no copy of it: the run tested another copy"
    )
    assert art.import_origins["aiter"].seen == "imported" and art.run.ran


def test_container_not_in_table_gets_no_exec(sandbox):
    stranger = "gv-stranger-" + sandbox.container[-8:]
    sandbox.start_container(stranger)
    sandbox.rewrite_env(repo_rows=[("aiter", sandbox.repo, stranger, "/workspace/aiter")])
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and "not in the Containers table" in art.reasons[0], out(proc)
    assert sandbox.exec_ids(stranger) == [], "a container that is not the user's must receive no exec at all"


def test_stopped_container_is_not_started(sandbox):
    c = sandbox.client.containers.get(sandbox.container)
    c.stop(timeout=1)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and f"docker start {sandbox.container}" in art.reasons[0], out(proc)
    c.reload()
    assert c.status != "running"


def test_wrong_arch_in_container_is_inconclusive(sandbox, tmp_path):
    from pytest_gpuverify.simulator import SimState, install

    other = tmp_path / "sim950"
    install(other, SimState.idle(gpus=4, arch="gfx950"))
    name = "gv-arch-" + sandbox.container[-8:]
    sandbox.start_container(name, sim_bin=other)
    sandbox.rewrite_env(
        repo_rows=[("aiter", sandbox.repo, name, "/workspace/aiter")], containers=[(name, "gpuverify-rootfs:1")]
    )
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and "wrong arch in container" in art.reasons[0], out(proc)
    assert art.exit_code is None


def test_dirty_repo_is_inconclusive_unless_allowed(sandbox):
    (sandbox.repo / "op_tests" / "test_gemm_a8w8.py").write_text(
        (sandbox.repo / "op_tests" / "test_gemm_a8w8.py").read_text() + "\n# local edit\n"
    )
    sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and "dirty" in art.reasons[0]
    sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-allow-dirty")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS" and art.repos[0].dirty is True
    earlier = list((sandbox.tickets / "T-1").glob("bench_gemm_a8w8.*.json"))
    assert earlier, "the earlier artifact is moved aside, never overwritten"


def test_timeout_stops_command_and_frees_lock(sandbox):
    proc = sandbox.pytest("op_tests/test_sleep.py", "--gpu-timeout", "2")
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and art.timed_out and art.reasons[0].startswith("timeout"), out(proc)
    assert sandbox.lock_files_free()
    c = sandbox.client.containers.get(sandbox.container)
    ps = c.exec_run(
        ["sh", "-c", "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done"]
    ).output.decode()
    assert "test_sleep.py" not in ps, "the command was stopped"


def test_garbage_output_never_crashes(sandbox):
    proc = sandbox.pytest("op_tests/test_garbage_output.py")
    art = sandbox.artifact("garbage_output")
    assert art.verdict == "INCONCLUSIVE", out(proc)
    assert art.raw_output_bytes > 3 << 20
    assert "Traceback" not in proc.stderr.decode(errors="replace")


def test_hundred_megabyte_output_streams_to_disk(sandbox):
    proc = sandbox.pytest("op_tests/test_huge_output.py", timeout=600)
    art = sandbox.artifact("huge_output")
    assert art.verdict == "PASS", (art.reasons, out(proc)[-2000:])
    assert art.raw_output_bytes > 100 << 20
    assert art.raw_output_sha256 == sha256_file(sandbox.tickets / "T-1" / art.raw_output)


def test_missing_env_file_stops_before_any_container(sandbox, tmp_path):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-env", str(tmp_path / "nope.md"))
    text = out(proc)
    assert proc.returncode == 4, text
    assert "/setup-mstack env" in text and "--gpu-env" in text
    assert sandbox.exec_ids() == []
    assert not (sandbox.tickets / "T-1").exists()


def test_bad_ticket_is_a_usage_error(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", ticket="bad/key")
    assert proc.returncode == 4 and "--ticket" in out(proc)


@pytest.mark.slow
def test_without_gpu_verify_plugin_changes_nothing(tmp_path):
    import sys

    (tmp_path / "test_plain.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (tmp_path / "op_tests").mkdir()
    (tmp_path / "op_tests" / "test_op.py").write_text("def test_op():\n    pass\n")

    def run(*extra):
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *extra, str(tmp_path)],
            capture_output=True,
            cwd=tmp_path,
        )
        lines = [
            ln
            for ln in out(proc).splitlines()
            if not ln.startswith(("plugins:", "=", "platform", "rootdir", "cachedir"))
        ]
        return proc.returncode, lines

    with_plugin, without_plugin = run(), run("-p", "no:gpuverify")
    assert with_plugin == without_plugin
    assert with_plugin[0] == 0 and "PASSED op_tests/test_op.py::test_op" in with_plugin[1]


def test_ctrl_c_stops_command_writes_artifact_frees_lock(sandbox):
    import signal

    proc = sandbox.start_sleeper()
    assert not sandbox.lock_files_free(), "the GPU is locked while the command runs"
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=60)[0].decode(errors="replace")
    assert proc.returncode == 2, output
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and "interrupted" in art.reasons[0], output
    assert art.raw_output_sha256
    assert sandbox.lock_files_free()
    assert sandbox.command_gone(), "Ctrl-C stops the command in the container"
    c = sandbox.client.containers.get(sandbox.container)
    pid_files = c.exec_run(["sh", "-c", "ls /tmp/gpuverify/*.pid 2>/dev/null | wc -l"]).output.decode().strip()
    assert pid_files == "0", "the run's scratch (pid files) is removed"
