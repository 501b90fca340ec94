"""Options that name files, and the messages around them, end to end:
every refused option is one usage line with nothing written; every line printed names what happened."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from datetime import datetime

import pytest
from kernel_repos import sim_env, verify_argv

from pytest_gpuverify.cli import demo

pytestmark = pytest.mark.docker
EXAMPLES = demo.Path(__file__).resolve().parents[2] / "conftest_examples"


def out(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def commit(repo, message="change"):
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], check=True
    )


def files_under(root) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts}


def summary(text: str) -> str:
    return text[text.index("gpuverify =") :]


@pytest.mark.parametrize("topic", ["a/b", "../../escape", "..", "x" * 300, "sub/../x"])
def test_a_topic_that_is_not_a_name_is_a_usage_error_and_nothing_is_written(sandbox, topic):
    before = files_under(sandbox.root)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", f"--gpu-topic={topic}")
    text = out(proc)
    assert proc.returncode == 4, text
    error = [line for line in text.splitlines() if "--gpu-topic" in line]
    assert len(error) == 1 and "is not a topic name" in error[0] and "Fix:" in error[0], text
    assert files_under(sandbox.root) - before == set(), "nothing is written"
    assert sandbox.exec_ids() == []


def test_a_json_suffix_on_the_topic_is_not_doubled(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-topic", "gemm.json")
    assert proc.returncode == 0, out(proc)
    assert sorted(p.name for p in (sandbox.tickets / "T-1").glob("*.json")) == ["bench_gemm.json"]
    assert sandbox.artifact("gemm").topic == "gemm"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["session", "xdist"])
def test_one_topic_for_two_targets_is_a_usage_error(sandbox, xdist):
    proc = sandbox.pytest(*xdist, "op_tests/test_gemm_a8w8.py", "op_tests/test_rmsnorm2d.py", "--gpu-topic", "t2")
    text = out(proc)
    assert proc.returncode == 4 and "--gpu-topic t2 names one target's artifact, but 2 targets" in text, text
    assert "INTERNALERROR" not in text and not (sandbox.tickets / "T-1").exists()
    assert not any("test_gemm_a8w8" in e or "test_rmsnorm2d" in e for e in sandbox.exec_ids()), "no target ran"


def test_the_default_topic_with_args_is_the_file_name_and_the_args_are_recorded(sandbox):
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-args=-d bf16 -m 128 --name a/b")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "PASS", out(proc)
    assert art.target.args == ["-d", "bf16", "-m", "128", "--name", "a/b"]
    assert art.command == "python3 op_tests/test_gemm_a8w8.py -d bf16 -m 128 --name a/b"


def test_gpu_args_reach_declared_targets_too(sandbox):
    shutil.copy(EXAMPLES / "aiter" / "gpuverify.toml", sandbox.repo / "gpuverify.toml")
    commit(sandbox.repo, "declare")
    proc = sandbox.pytest("--gpu-target", "gemm-a8w8-bf16", "--gpu-args=-m 128")
    art = sandbox.artifact("gemm-a8w8-bf16")
    assert art.verdict == "PASS", out(proc)
    assert art.command == "python3 op_tests/test_gemm_a8w8.py -d bf16 -m 128"
    assert art.target.args == ["-d", "bf16", "-m", "128"]
    # a file a declaration also names: its declared targets, with the args
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", "--gpu-args=-m 256", ticket="T-2")
    art = sandbox.artifact("gemm-a8w8-bf16", ticket="T-2")
    assert art.verdict == "PASS", out(proc)
    assert art.command == "python3 op_tests/test_gemm_a8w8.py -d bf16 -m 256"


def test_gpu_target_with_paths_runs_both_and_the_summary_shows_both(sandbox):
    shutil.copy(EXAMPLES / "aiter" / "gpuverify.toml", sandbox.repo / "gpuverify.toml")
    commit(sandbox.repo, "declare")
    proc = sandbox.pytest("--gpu-target", "gemm-a8w8-bf16", "op_tests/test_rmsnorm2d.py")
    text = summary(out(proc))
    assert proc.returncode == 0, out(proc)
    assert re.search(r"^PASS +\S*gpuverify\.toml::gemm-a8w8-bf16 .*-> .*bench_gemm-a8w8-bf16\.json$", text, re.M), text
    assert re.search(r"^PASS +\S*op_tests/test_rmsnorm2d\.py::rmsnorm2d .*-> .*bench_rmsnorm2d\.json$", text, re.M), (
        text
    )


def test_a_ticket_without_a_tickets_folder_is_a_usage_error(sandbox):
    sandbox.rewrite_env(tickets="not set")
    before = files_under(sandbox.repo)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py", ticket="AITER-9")
    text = out(proc)
    assert proc.returncode == 4, text
    assert "--ticket AITER-9 is given, but `tickets` is not set" in text and "Fix:" in text, text
    assert files_under(sandbox.repo) == before, "no artifact lands in the repo checkout"
    assert sandbox.exec_ids() == []


TWIN = (demo.DEMO_REPOS / "aiter" / "op_tests" / "test_rmsnorm2d.py").read_text()


def test_xdist_workers_never_share_an_artifact_and_the_summary_names_each_file(sandbox):
    (sandbox.repo / "op_tests" / "test_twin.py").write_text(TWIN)
    (sandbox.repo / "op_tests" / "more").mkdir()
    (sandbox.repo / "op_tests" / "more" / "test_twin.py").write_text(TWIN)
    commit(sandbox.repo, "two targets of one topic")
    proc = sandbox.pytest("-n", "2", "op_tests/test_twin.py", "op_tests/more/test_twin.py")
    text = summary(out(proc))
    assert proc.returncode == 0, out(proc)
    printed = re.findall(r"-> (\S+\.json)$", text, re.M)
    ticket = sandbox.tickets / "T-1"
    assert sorted(printed) == sorted(str(ticket / n) for n in ("bench_twin.json", "bench_twin-2.json")), text
    assert sorted(p.name for p in ticket.glob("*.json")) == ["bench_twin-2.json", "bench_twin.json"]
    paths = {sandbox.artifact(t).target.path for t in ("twin", "twin-2")}
    assert paths == {
        str(sandbox.repo / "op_tests" / "test_twin.py"),
        str(sandbox.repo / "op_tests" / "more" / "test_twin.py"),
    }


def test_a_missing_lock_folder_stops_the_run_and_doctor_says_so(sandbox):
    missing = sandbox.root / "no-such-locks"
    sandbox.rewrite_env(locks=missing)
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    text = out(proc)
    assert proc.returncode == 4, text
    assert f"the GPU lock folder {missing} does not exist. Fix: create it" in text, text
    assert "internal error" not in text and not (sandbox.tickets / "T-1").exists() and sandbox.exec_ids() == []
    code, report = doctor(sandbox)
    last = report.strip().splitlines()[-1]
    assert code == 1 and last.startswith("NOT READY") and f"the GPU lock folder {missing} does not exist" in last


def doctor(sandbox) -> tuple[int, str]:
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(sandbox.env_path)],
        capture_output=True,
        cwd=sandbox.root,  # the code under test, not the one in the cwd
        env=sim_env(sandbox),
    )
    return proc.returncode, out(proc)


def test_doctor_is_not_ready_for_a_repo_its_container_does_not_mount(sandbox):
    other = sandbox.root / "elsewhere"
    other.mkdir()
    name = "gv-mnt-" + sandbox.container[-8:]
    sandbox.start_container(name, mounts={str(other): "/workspace/aiter"})
    sandbox.rewrite_env(
        repo_rows=[("aiter", sandbox.repo, name, "/workspace/aiter")], containers=[(name, demo.ROOTFS_IMAGE)]
    )
    code, report = doctor(sandbox)
    last = report.strip().splitlines()[-1]
    assert code == 1 and f"repo aiter: {sandbox.repo} is not mounted in container {name}" in last, report
    proc = sandbox.pytest("op_tests/test_gemm_a8w8.py")
    art = sandbox.artifact("gemm_a8w8")
    assert art.verdict == "INCONCLUSIVE" and "bind-mounted" in art.reasons[0], out(proc)  # what doctor foretold


def test_doctor_names_who_holds_a_lock(sandbox):
    import time

    lock = sandbox.spec.locks / "gpu-1.lock"
    holder = subprocess.Popen(["flock", "-x", "-o", str(lock), "sleep", "30"])
    try:
        time.sleep(0.3)
        code, report = doctor(sandbox)
        assert code == 0, report
        assert f"LOCKED ({lock}) by pid {holder.pid} (root): flock -x -o {lock} sleep 30  ->" in report, report
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_summary_counts_targets_stopped_by_a_signal(sandbox, sig):
    proc = sandbox.start_sleeper()
    proc.send_signal(sig)
    text = proc.communicate(timeout=60)[0].decode(errors="replace")
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE", text
    if sig != signal.SIGINT:  # SIGHUP: the terminal closed, the ssh session dropped
        assert art.reasons[0].startswith(f"interrupted ({sig.name})"), art.reasons
    assert "no GPU targets ran" not in text, text
    last = text.strip().splitlines()[-1]
    assert "no tests ran" not in last and "1 inconclusive" in last, last  # pytest's own line counts the target
    path = sandbox.tickets / "T-1" / "bench_sleep.json"
    assert re.search(rf"^INCONCLUSIVE +\S+ +gpu \d+ +interrupted .*-> {re.escape(str(path))}$", summary(text), re.M), (
        text
    )


IGNORES_TERM = """# Ignores SIGTERM (as a hung kernel launch can): only SIGKILL stops it.
import signal
import time

import aiter

signal.signal(signal.SIGTERM, lambda *a: print("got SIGTERM, going on", flush=True))
aiter.report_environment()
print(f"started {time.time()}", flush=True)
while True:
    time.sleep(0.1)
"""


@pytest.mark.parametrize("where", ["container", "host"])
def test_a_command_ignoring_sigterm_is_gone_within_timeout_plus_5_s(sandbox, where):
    (sandbox.repo / "op_tests" / "test_stubborn.py").write_text(IGNORES_TERM)
    commit(sandbox.repo, "stubborn")
    extra = ["--gpu-container", "none"] if where == "host" else []
    proc = sandbox.pytest("op_tests/test_stubborn.py", "--gpu-timeout", "2", *extra)
    art = sandbox.artifact("stubborn")
    assert art.verdict == "INCONCLUSIVE" and art.timed_out, (art.reasons, out(proc)[-2000:])
    raw = (sandbox.tickets / "T-1" / art.raw_output).read_text()
    assert "got SIGTERM, going on" in raw, raw
    started = float(re.search(r"^started ([\d.]+)$", raw, re.M).group(1))
    # the command's end (stamped once it was gone, never earlier) is within the limit and the 3 s grace, plus
    # slack; the artifact's own making after it (finished_ts) is no part of the bound
    ended = datetime.fromisoformat(art.timeline.command_ended).timestamp()
    assert ended - started < 2 + 5, (art.timeline.command_ended, started)
    assert sandbox.lock_files_free()


def test_kill_9_of_pytest_stops_a_command_ignoring_sigterm_before_the_lock_goes(sandbox):
    """The guard's SIGKILL after the grace reaches the whole command, not only the wrapper's `timeout`."""
    import time

    (sandbox.repo / "op_tests" / "test_stubborn.py").write_text(IGNORES_TERM)
    commit(sandbox.repo, "stubborn")
    cmd = verify_argv(sandbox, "op_tests/test_stubborn.py")
    proc = subprocess.Popen(
        cmd,
        cwd=sandbox.repo,
        env=sim_env(sandbox),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not any(b"started" in p.read_bytes() for p in (sandbox.tickets / "T-1").glob("bench_stubborn.*.log")):
        assert time.monotonic() < deadline and proc.poll() is None, "the target never started"
        time.sleep(0.1)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        free = sandbox.lock_files_free()
        runs = not sandbox.command_gone("test_stubborn.py")
        assert not (free and runs), "the GPU was free while the orphaned command still ran on it"
        if free or time.monotonic() > deadline:
            break
    assert free and not runs
