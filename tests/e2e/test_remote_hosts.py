"""GPU hosts over SSH (remote/): real sshd hosts on loopback (tests/sshd_hosts.py), real xdist
workers through execnet SSH gateways, real containers, locks and simulated ROCm state per host."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.records.artifact import read_artifact
from pytest_gpuverify.verify.exclusivity import find_overlaps, holds_of

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import ssh_hosts, sshd_unavailable, worker_pids  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


def _empty(hosts) -> Path:
    folder = hosts.root / "no-checkout"
    folder.mkdir(exist_ok=True)
    return folder


def add_targets(repo: Path, count: int) -> list[str]:
    """``count`` passing op_tests (copies of the gemm one), committed so the checkout stays clean."""
    names = []
    for i in range(count):
        name = f"op_tests/test_fan{i}.py"
        shutil.copy(repo / "op_tests/test_gemm_a8w8.py", repo / name)
        names.append(name)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fan-out targets"], check=True)
    return names


def test_gpu_host_runs_on_that_host_from_a_folder_with_no_checkout(two_hosts):
    r = two_hosts.pytest("--gpu-host", "hostB", "--ticket", "T-1", "op_tests/test_gemm_a8w8.py", cwd=_empty(two_hosts))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS         op_tests/test_gemm_a8w8.py::gemm_a8w8  gpu " in r.stdout  # node ids as in the checkout
    host_b = two_hosts["hostB"]
    art = read_artifact(host_b.tickets / "T-1" / "bench_gemm_a8w8.json")
    assert art.verdict == "PASS" and art.host == "hostB"
    assert art.container == host_b.container
    assert demo.exec_commands(two_hosts.client, host_b.container, two_hosts.started)
    assert not demo.exec_commands(two_hosts.client, two_hosts["hostA"].container, two_hosts.started)
    assert not (two_hosts["hostA"].tickets / "T-1").exists()
    assert host_b.lock_files_free()
    landed = two_hosts.root / "controller-tickets" / "T-1"  # the controller took the host's files
    assert (landed / "bench_gemm_a8w8.json").read_bytes() == (
        host_b.tickets / "T-1" / "bench_gemm_a8w8.json"
    ).read_bytes()
    assert (landed / art.raw_output).is_file()
    assert f"1 artifacts of the hosts copied to {landed}" in r.stdout
    # the worker's compiled pytest is kept out of xdist's copy, which deletes it at every session
    home = Path.home()  # the hosts' ssh user is this machine's
    kept = home / ".cache/gpuverify/pycache" / str(home / ".gpuverify-xdist/_pytest").lstrip("/")
    assert list(kept.glob("main.cpython-*.pyc")), "the worker compiled pytest into its copy"
    assert not list((home / ".gpuverify-xdist/_pytest/__pycache__").glob("main.cpython-*.pyc"))


def test_hostname_printing_another_name_stops_the_run(tmp_path_factory, docker_client):
    with ssh_hosts(
        tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 1), ("hostB", 1)], liars={"hostB": "imposter"}
    ) as hosts:
        r = hosts.pytest("--gpu-host", "hostB", "--ticket", "T-1", "op_tests/test_gemm_a8w8.py", cwd=_empty(hosts))
        assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
        assert "`ssh gv13-hostB hostname` printed 'imposter'" in r.stderr
        assert "match the result to the table" in r.stderr and "Fix:" in r.stderr
        assert not demo.exec_commands(docker_client, hosts["hostB"].container, hosts.started)


def test_plugin_version_differing_on_the_host_stops_with_the_pip_fix(tmp_path_factory, docker_client):
    old = tmp_path_factory.mktemp("old-plugin")
    (old / "pytest_gpuverify").mkdir()
    (old / "pytest_gpuverify" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    os.chmod(old, 0o755)
    with ssh_hosts(
        tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 1), ("hostB", 1)], pythonpaths={"hostB": str(old)}
    ) as hosts:
        r = hosts.pytest("--gpu-host", "hostB", "--ticket", "T-1", "op_tests/test_gemm_a8w8.py", cwd=_empty(hosts))
        assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
        line = next(ln for ln in r.stderr.splitlines() if "hostB" in ln)
        assert "pytest-gpuverify 0.0.1 is installed" in line and "the controller has 0.1.0" in line
        assert f"Fix: ssh gv13-hostB {sys.executable} -m pip install 'pytest-gpuverify==0.1.0'" in line
        assert not demo.exec_commands(docker_client, hosts["hostB"].container, hosts.started)


def test_fan_out_over_two_hosts_uses_four_gpus_never_two_on_one(two_hosts):
    targets = add_targets(two_hosts.repo, 8)
    r = two_hosts.pytest("--gpu-hosts", "all", "--ticket", "FAN", *targets, cwd=_empty(two_hosts), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    holds, seen = [], set()
    for host in two_hosts.hosts:
        for path in sorted((host.tickets / "FAN").glob("bench_*.json")):
            art = read_artifact(path)
            assert art.verdict == "PASS" and art.host == host.name and art.container == host.container
            seen.add((art.host, art.gpu.index))
            found, problem = holds_of(art, path)
            assert problem is None
            holds += found
    assert len(holds) == 8
    assert seen == {("hostA", 0), ("hostA", 1), ("hostB", 0), ("hostB", 1)}
    assert find_overlaps(holds) == []
    assert all(h.lock_files_free() for h in two_hosts.hosts)
    assert "host hostA: " in r.stdout and "host hostB: " in r.stdout  # the summary groups by host
    landed = sorted((two_hosts.root / "controller-tickets" / "FAN").glob("bench_*.json"))
    assert len(landed) == 8 and {read_artifact(p).host for p in landed} == {"hostA", "hostB"}
    # each worker was told to exit as it ended (remote/controller.py): none outlives the controller
    assert [pid for h in two_hosts.hosts for pid in worker_pids(h)] == [], "a worker outlived the controller"


def _check(path: Path, environ: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-P", "-m", "pytest_gpuverify.cli.main", "check", str(path)],
        capture_output=True,
        text=True,
        env=environ,
    )


def test_a_host_not_answering_ssh_keeps_its_targets_inconclusive_with_artifacts(two_hosts):
    """Targets are tied to hosts at collection (remote/placement.py): hostB's never run on hostA."""
    targets = add_targets(two_hosts.repo, 4)
    two_hosts["hostB"].stop()
    started = time.monotonic()
    r = two_hosts.pytest(
        "--gpu-hosts", "all", "--ticket", "T-1", *targets, cwd=_empty(two_hosts), env={"GPUVERIFY_SSH_TIMEOUT": "5"}
    )
    took = time.monotonic() - started
    # not a speed figure: hostA's two sessions take what the machine gives them; the bound catches a run
    # that waits on the dead host (its ssh, or its share) instead of going on without it
    assert took < 120, took
    assert r.returncode == pytest.ExitCode.TESTS_FAILED, r.stdout + r.stderr
    assert "host hostB: `ssh gv13-hostB hostname` failed" in r.stdout and "it ran nothing" in r.stdout
    on_a = sorted(p.name for p in (two_hosts["hostA"].tickets / "T-1").glob("bench_*.json"))
    assert on_a == ["bench_fan0.json", "bench_fan2.json"], r.stdout  # hostA ran its own share only
    for name in on_a:
        art = read_artifact(two_hosts["hostA"].tickets / "T-1" / name)
        assert art.verdict == "PASS" and art.host == "hostA"
    landed = two_hosts.root / "controller-tickets" / "T-1"
    for topic in ("fan1", "fan3"):  # hostB's share: INCONCLUSIVE naming hostB, each with its artifact
        path = landed / f"bench_{topic}.json"
        art = read_artifact(path)
        assert art.verdict == "INCONCLUSIVE" and art.host == "hostB" and art.run.ran is False
        assert art.reasons[0].startswith("host hostB: `ssh gv13-hostB hostname` failed")
        assert "tied to it and ran nowhere else" in art.reasons[0]
        assert art.target.name == topic and art.target.path == f"op_tests/test_{topic}.py"
        check = _check(path, two_hosts.controller_environ())
        assert check.returncode == 0, check.stdout + check.stderr
    summary = r.stdout.split("gpuverify ==")[1]
    assert "host hostA: 2/2 PASS" in summary and "host hostB: 0/2 PASS" in summary, summary
    assert not any(demo.exec_commands(two_hosts.client, two_hosts["hostB"].container, two_hosts.started) or [])


def test_no_host_answering_stops_the_run_naming_each(two_hosts):
    for host in two_hosts.hosts:
        host.stop()
    started = time.monotonic()
    r = two_hosts.pytest(
        "--gpu-hosts",
        "all",
        "--ticket",
        "T-1",
        "op_tests/test_gemm_a8w8.py",
        cwd=_empty(two_hosts),
        env={"GPUVERIFY_SSH_TIMEOUT": "5"},
    )
    assert time.monotonic() - started < 30
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "host hostA: `ssh gv13-hostA hostname` failed" in r.stderr and "host hostB:" in r.stderr
    assert "Fix: check the host is up" in r.stderr


def test_a_remote_host_without_xdist_loaded_is_a_usage_error(two_hosts):
    r = two_hosts.pytest(
        "-p", "no:xdist", "--gpu-host", "hostB", "--ticket", "T-1", "op_tests/test_gemm_a8w8.py", cwd=_empty(two_hosts)
    )
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "needs pytest-xdist, which is not loaded. Fix: pip install pytest-xdist" in r.stderr
    assert not (two_hosts["hostB"].tickets / "T-1").exists()


def _wait_sleeping(host, proc) -> None:
    deadline = time.time() + 120
    while time.time() < deadline:
        logs = list((host.tickets / "T-1").glob("bench_sleep.*.log")) if (host.tickets / "T-1").exists() else []
        if logs and b"sleeping" in logs[0].read_bytes():
            return
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the target never started")


def test_a_hung_worker_is_cut_at_the_plugins_deadline(two_hosts):
    """xdist has no heartbeat: a worker stopped (SIGSTOP) while ssh stays up would be waited for
    forever. The controller's deadline (--gpu-timeout + wait + window + margin) kills it on its host
    and ends its ssh: the target is INCONCLUSIVE naming the host, and the lock is free."""
    host_b = two_hosts["hostB"]
    started = time.monotonic()
    proc = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "T-1",
        "--gpu-timeout",
        "6",
        "--max-worker-restart",
        "0",
        "-n",
        "1",
        "op_tests/test_sleep.py",
        cwd=_empty(two_hosts),
        popen=True,
        env={"GPUVERIFY_REMOTE_MARGIN_S": "6"},
    )
    _wait_sleeping(host_b, proc)
    pids = worker_pids(host_b)
    assert len(pids) == 1
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        out = proc.communicate(timeout=90)[0].decode()
        time.sleep(1)
        left = [
            pid
            for pid in pids
            if Path(f"/proc/{pid}").exists()
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
        ]
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode != 0
    assert "INCONCLUSIVE" in out and "on host hostB gave no result within 12.3 s (the plugin's deadline)" in out, out
    assert time.monotonic() - started < 90
    assert left == []  # the controller killed the hung worker on its host
    art = read_artifact(two_hosts.root / "controller-tickets" / "T-1" / "bench_sleep.json")
    assert art.verdict == "INCONCLUSIVE" and "(the plugin's deadline)" in art.reasons[0]
    deadline = time.time() + 20
    while not host_b.lock_files_free() and time.time() < deadline:
        time.sleep(0.2)
    assert host_b.lock_files_free()


def test_a_worker_killed_mid_run_leaves_its_target_inconclusive_and_its_gpu_free(two_hosts):
    host_b = two_hosts["hostB"]
    proc = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "T-1",
        "--max-worker-restart",
        "0",
        "op_tests/test_sleep.py",
        cwd=_empty(two_hosts),
        popen=True,
    )
    _wait_sleeping(host_b, proc)
    assert not host_b.lock_files_free()  # its GPU is held while the command runs
    pids = worker_pids(host_b)
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode != 0
    assert "INCONCLUSIVE" in out and "on host hostB died mid-run" in out, out
    summary = out.split("gpuverify ==")[1]
    assert "INCONCLUSIVE" in summary and "hostB died mid-run" in summary  # the summary has the crashed target
    path = two_hosts.root / "controller-tickets" / "T-1" / "bench_sleep.json"  # no data lost: the controller wrote it
    art = read_artifact(path)
    assert art.verdict == "INCONCLUSIVE" and art.host == "hostB" and art.run.ran is False
    assert "on host hostB died mid-run" in art.reasons[0]
    assert str(path) in summary
    copied = list(path.parent.glob("bench_sleep.*.log"))  # the dead worker's raw log, fetched from hostB
    assert len(copied) == 1 and b"sleeping" in copied[0].read_bytes(), art.reasons[0]
    on_host = next((host_b.tickets / "T-1").glob("bench_sleep.*.log"))
    assert f"its raw log, copied from hostB:{on_host}, is {copied[0]}" in art.reasons[0]
    check = _check(path, two_hosts.controller_environ())
    assert check.returncode == 0, check.stdout + check.stderr
    deadline = time.time() + 20
    while not host_b.lock_files_free() and time.time() < deadline:
        time.sleep(0.2)
    assert host_b.lock_files_free()


def test_a_killed_worker_with_restarts_allowed_ends_its_target_and_the_restarted_one_runs_the_next(two_hosts):
    """xdist's default restarts a crashed worker (--max-worker-restart not given): the killed worker's
    target is still INCONCLUSIVE with its artifact and the GPU lock is free; the restarted worker of
    the same host runs the host's next target (remote/scheduler.py gives it back its host's share)."""
    host_b = two_hosts["hostB"]
    proc = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "T-1",
        "-n",
        "1",
        "op_tests/test_sleep.py",
        "op_tests/test_gemm_a8w8.py",
        cwd=_empty(two_hosts),
        popen=True,
    )
    _wait_sleeping(host_b, proc)
    pids = worker_pids(host_b)
    assert len(pids) == 1
    os.kill(pids[0], signal.SIGKILL)
    out = proc.communicate(timeout=180)[0].decode()
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "replacing crashed worker gw0" in out, out  # xdist restarted it
    landed = two_hosts.root / "controller-tickets" / "T-1"
    killed = read_artifact(landed / "bench_sleep.json")
    assert killed.verdict == "INCONCLUSIVE" and killed.host == "hostB" and "died mid-run" in killed.reasons[0]
    after = read_artifact(landed / "bench_gemm_a8w8.json")  # handed back by the restarted worker
    assert after.verdict == "PASS" and after.host == "hostB", after.reasons
    deadline = time.time() + 20
    while not host_b.lock_files_free() and time.time() < deadline:
        time.sleep(0.2)
    assert host_b.lock_files_free()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_declared_target_is_found_in_the_hosts_checkout(two_hosts):
    (two_hosts.repo / "gpuverify.toml").write_text(
        '[[targets]]\nname = "gemm-declared"\npath = "op_tests/test_gemm_a8w8.py"\ntopic = "gemm_declared"\n'
    )
    _git(two_hosts.repo, "add", "-A")
    _git(two_hosts.repo, "commit", "-qm", "declare")
    r = two_hosts.pytest(
        "--gpu-host", "hostB", "--ticket", "T-1", "--gpu-target", "gemm-declared", cwd=_empty(two_hosts)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    art = read_artifact(two_hosts["hostB"].tickets / "T-1" / "bench_gemm_declared.json")
    assert art.verdict == "PASS" and art.host == "hostB" and art.target.name == "gemm-declared"
    assert art.repos and art.repos[0].sha == _git(two_hosts.repo, "rev-parse", "HEAD")  # read on the host


def test_a_declared_topic_names_the_artifact_of_a_target_that_never_ran(two_hosts):
    """The controller has no checkout: the worker's node id carries the declared topic
    (remote/placement.py), so the INCONCLUSIVE artifact of hostB's share is named by it."""
    (two_hosts.repo / "gpuverify.toml").write_text(
        '[[targets]]\nname = "t-one"\npath = "op_tests/test_gemm_a8w8.py"\ntopic = "one_topic"\n\n'
        '[[targets]]\nname = "t-two"\npath = "op_tests/test_gemm_a8w8.py"\ntopic = "two_topic"\n'
    )
    _git(two_hosts.repo, "add", "-A")
    _git(two_hosts.repo, "commit", "-qm", "declare two")
    two_hosts["hostB"].stop()
    r = two_hosts.pytest(
        "--gpu-hosts",
        "all",
        "--ticket",
        "T-1",
        "--gpu-target",
        "t-one",
        "--gpu-target",
        "t-two",
        cwd=_empty(two_hosts),
        env={"GPUVERIFY_SSH_TIMEOUT": "5"},
    )
    assert r.returncode == pytest.ExitCode.TESTS_FAILED, r.stdout + r.stderr
    ran = [read_artifact(p) for p in (two_hosts["hostA"].tickets / "T-1").glob("bench_*.json")]
    assert len(ran) == 1 and ran[0].verdict == "PASS"
    landed = {p.name: read_artifact(p) for p in (two_hosts.root / "controller-tickets" / "T-1").glob("bench_*.json")}
    assert set(landed) == {"bench_one_topic.json", "bench_two_topic.json"}, r.stdout
    unran = [a for a in landed.values() if a.verdict == "INCONCLUSIVE"]
    assert len(unran) == 1 and unran[0].host == "hostB" and unran[0].run.ran is False
    assert {ran[0].topic, unran[0].topic} == {"one_topic", "two_topic"}
    assert unran[0].target.name == {"one_topic": "t-one", "two_topic": "t-two"}[unran[0].topic]


def test_gpu_sync_copies_the_local_checkout_and_records_it(two_hosts):
    from pytest_gpuverify.remote.sync import file_list

    laptop = two_hosts.root / "laptop" / "aiter"
    laptop.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(two_hosts.repo), str(laptop)], check=True)
    (laptop / "NOTES.md").write_text("local work\n")
    _git(laptop, "add", "-A")
    _git(laptop, "commit", "-qm", "local commit")  # a commit the host's checkout does not have
    gemm = laptop / "op_tests/test_gemm_a8w8.py"
    gemm.write_text(gemm.read_text() + '\nprint("LOCAL-EDIT-42")\n')  # uncommitted: dirty
    (laptop / "build").mkdir()
    (laptop / "build" / "big.o").write_text("build output")
    (two_hosts.repo / "stale_on_host.txt").write_text("only on the host")
    host_sha = _git(two_hosts.repo, "rev-parse", "HEAD")

    r = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--gpu-sync",
        "--gpu-sync-overwrite",
        "--gpu-allow-dirty",
        "--ticket",
        "S",
        "op_tests/test_gemm_a8w8.py",
        cwd=laptop,
    )  # the host's own file: replaced on request
    assert r.returncode == 0, r.stdout + r.stderr
    path = two_hosts["hostB"].tickets / "S" / "bench_gemm_a8w8.json"
    art = read_artifact(path)
    assert art.verdict == "PASS" and art.host == "hostB"
    assert b"LOCAL-EDIT-42" in (path.parent / art.raw_output).read_bytes()  # the synced file ran
    assert _git(two_hosts.repo, "rev-parse", "HEAD") == host_sha  # .git was not copied over the host's
    assert (two_hosts.repo / "NOTES.md").exists() and not (two_hosts.repo / "stale_on_host.txt").exists()  # --delete
    assert not (two_hosts.repo / "build").exists()  # build folders stay local
    synced = art.synced
    assert synced.local_sha == _git(laptop, "rev-parse", "HEAD") != host_sha
    assert synced.dirty and sorted(synced.dirty_paths) == ["build/", "op_tests/test_gemm_a8w8.py"]  # as git says
    import hashlib

    assert synced.files_sha256 == hashlib.sha256(("\n".join(file_list(laptop)) + "\n").encode()).hexdigest()
    assert synced.host_path == str(two_hosts.repo) and synced.repo == "aiter"
    assert synced.removed == ["stale_on_host.txt"] and synced.replaced == ["stale_on_host.txt"]
    check = subprocess.run(
        [sys.executable, "-P", "-m", "pytest_gpuverify.cli.main", "check", str(path)],
        capture_output=True,
        text=True,
        env=two_hosts.controller_environ(),
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_multi_gpu_target_goes_to_the_host_with_enough_gpus(tmp_path_factory, docker_client):
    """hostA has 1 GPU, hostB 2: the `gpus = 2` target runs on hostB (on both its GPUs) whatever the
    balance says; a `gpus = 4` target fits no host: INCONCLUSIVE with the fix, and its artifact."""
    with ssh_hosts(tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 1), ("hostB", 2)]) as hosts:
        (hosts.repo / "gpuverify.toml").write_text(
            '[[targets]]\nname = "tp2"\npath = "op_tests/test_gemm_a8w8.py"\ntopic = "tp2"\ngpus = 2\n\n'
            '[[targets]]\nname = "one"\npath = "op_tests/test_rmsnorm2d.py"\ntopic = "one"\n\n'
            '[[targets]]\nname = "tp4"\npath = "op_tests/test_gemm_a8w8.py"\ntopic = "tp4"\ngpus = 4\n'
        )
        _git(hosts.repo, "add", "-A")
        _git(hosts.repo, "commit", "-qm", "declare")
        r = hosts.pytest(
            "--gpu-hosts",
            "all",
            "--ticket",
            "MG",
            "--gpu-target",
            "tp2",
            "--gpu-target",
            "one",
            "--gpu-target",
            "tp4",
            cwd=_empty(hosts),
        )
        assert r.returncode == pytest.ExitCode.TESTS_FAILED, r.stdout + r.stderr
        tp2 = read_artifact(hosts["hostB"].tickets / "MG" / "bench_tp2.json")
        assert tp2.verdict == "PASS" and tp2.host == "hostB", tp2.reasons
        assert sorted(g.index for g in tp2.gpus) == [0, 1]
        assert not (hosts["hostA"].tickets / "MG" / "bench_tp2.json").exists()
        one = read_artifact(hosts["hostA"].tickets / "MG" / "bench_one.json")  # the balance put it on the idle host
        assert one.verdict == "PASS" and one.host == "hostA"
        path = hosts.root / "controller-tickets" / "MG" / "bench_tp4.json"
        tp4 = read_artifact(path)
        assert tp4.verdict == "INCONCLUSIVE" and tp4.run.ran is False
        assert "target tp4 needs 4 GPUs; the most any host has is 2 (hostB)" in tp4.reasons[0]
        assert "Fix:" in tp4.reasons[0]
        assert _check(path, hosts.controller_environ()).returncode == 0
        assert "tp4 needs 4 GPUs" in r.stdout


def test_a_workers_wait_line_shows_on_the_controller(two_hosts):
    """The worker on hostB waits for a busy GPU (--gpu-wait); its live line comes over its own execnet
    channel (remote/waitline.py) and shows on the controller's terminal, naming hostB."""
    import threading

    from pytest_gpuverify.simulator import STATE_FILE, load_state, save_state

    state_path = two_hosts["hostB"].sim_bin / STATE_FILE

    def set_all(busy: bool) -> None:
        state = load_state(state_path)
        for i in range(len(state.gpus)):
            state.set_busy(i) if busy else state.set_idle(i)
        save_state(state, state_path)

    set_all(True)
    proc = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "W",
        "--gpu-wait",
        "90",
        "op_tests/test_gemm_a8w8.py",
        cwd=_empty(two_hosts),
        popen=True,
    )
    seen = bytearray()
    waiting = threading.Event()

    def read() -> None:
        while chunk := proc.stdout.read1(4096):
            seen.extend(chunk)
            if b" s on hostB: " in seen:
                waiting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    shown = waiting.wait(120)  # the worker on hostB waits for a GPU: the controller shows it, live
    set_all(False)
    proc.wait(120)
    reader.join(10)
    out = seen.decode(errors="replace")
    assert shown, out
    assert proc.returncode == 0, out
    assert "gpuverify: waiting up to" in out and " s on hostB: " in out and "2 busy" in out, out
    assert "its wait line is not shown here" not in out
