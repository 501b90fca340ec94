"""Many Unix users on one host: lock files made by another user's flock(1), a team's tickets folder.

The second user is made with useradd (we are root here and in CI) and runs the plugin with
``--gpu-container none``: the lock files, the tickets folder and the artifacts are what these tests
are about, and a host run needs no Docker group for the peer (the container path opens the lock the
same way). The sandbox sits in a world-readable folder (pytest's tmp_path is root's, 0700).
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from sandboxes import make_sandbox

pytestmark = pytest.mark.docker

# Prints when it started, then what test_rmsnorm2d.py prints: a PASS with its start time in the log.
STAMPED = """
import time
print(f"gv-started {time.time():.6f}", flush=True)
exec(open("op_tests/test_rmsnorm2d.py").read())
"""


def text(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


@pytest.fixture
def shared_host(world_dir, docker_client, second_user):
    """A simulated host every user can read, its 1777 lock folder with lock files root's flock(1)
    made under umask 022, a tickets folder for the team, and a checkout of the second user's own."""
    with make_sandbox(world_dir / "host", docker_client) as box:
        locks = box.spec.locks
        os.chmod(locks, 0o1777)
        for gpu in range(box.spec.gpus):
            subprocess.run(["sh", "-c", f"umask 022; flock {locks}/gpu-{gpu}.lock true"], check=True)
        os.chmod(box.tickets, 0o1777)
        (box.repo / "op_tests" / "test_stamped.py").write_text(STAMPED)
        subprocess.run(["git", "-C", str(box.repo), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(box.repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"], check=True
        )
        subprocess.run(["chown", "-R", f"{second_user.uid}:{second_user.gid}", str(box.repo)], check=True)
        yield box


def peer_pytest(box, user, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [
        user.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "pytest_gpuverify.plugin",
        "--gpu-verify",
        "--gpu-window",
        "0.3",
        "--gpu-env",
        str(box.env_path),
        "--ticket",
        "T-1",
        "--gpu-container",
        "none",
        *args,
    ]
    return user.run(cmd, cwd=box.repo, env={"PATH": f"{box.sim_bin}:/usr/local/bin:/usr/bin:/bin"}, timeout=timeout)


def lock_files(box) -> dict:
    return {p.name: (p.stat().st_uid, stat.S_IMODE(p.stat().st_mode)) for p in sorted(box.spec.locks.glob("*.lock"))}


def test_a_second_user_runs_on_lock_files_of_roots_flock(shared_host, second_user):
    box = shared_host
    before = lock_files(box)
    assert set(before.values()) == {(0, 0o644)}, before  # root's flock(1) under umask 022
    proc = peer_pytest(box, second_user, "op_tests/test_gemm_a8w8.py")  # it JIT-builds into its cache
    art = box.artifact("gemm_a8w8")
    assert art.verdict == "PASS", (art.reasons, text(proc)[-3000:])
    assert art.cache_dirs["AITER_JIT_DIR"].startswith(f"/tmp/gpuverify-{second_user.uid}/cache/"), (
        "a host run's caches are the user's own (another user's /tmp/gpuverify would refuse the build)"
    )
    assert lock_files(box) == before, "lock files keep their owner and mode"
    ticket = box.tickets / "T-1"
    assert ticket.stat().st_uid == second_user.uid
    assert {p.suffix: stat.S_IMODE(p.stat().st_mode) for p in ticket.iterdir()} == {".json": 0o644, ".log": 0o644}
    assert box.lock_files_free()


def _hold_every_lock(box):
    """root's `flock(1)` holding every GPU's lock, until killed."""
    holders = [
        subprocess.Popen(["flock", "-x", "-o", str(box.spec.locks / f"gpu-{g}.lock"), "sleep", "300"])
        for g in range(box.spec.gpus)
    ]
    deadline = time.time() + 30
    while not all(
        subprocess.run(["flock", "-n", str(p), "true"]).returncode == 1 for p in box.spec.locks.glob("*.lock")
    ):
        assert time.time() < deadline, "the flock(1) holders never took the locks"
        time.sleep(0.05)
    return holders


def test_every_lock_held_by_another_users_flock_is_no_gpu(shared_host, second_user):
    box = shared_host
    holders = _hold_every_lock(box)
    try:
        proc = peer_pytest(box, second_user, "op_tests/test_rmsnorm2d.py", "--gpu-wait", "0")
        art = box.artifact("rmsnorm2d")
        assert art.verdict == "INCONCLUSIVE" and art.reasons[0].startswith("NO_GPU"), (art.reasons, text(proc)[-2000:])
        assert "4 held by locks" in art.reasons[0] and not art.run.ran
    finally:
        for h in holders:
            h.kill()
            h.wait()


def test_gpu_wait_takes_the_gpu_after_the_other_users_release(shared_host, second_user):
    import threading

    box = shared_host
    holders = _hold_every_lock(box)
    released = {}

    def release_one():
        time.sleep(3)
        holders[2].kill()
        holders[2].wait()
        released["t"] = time.time()

    releaser = threading.Thread(target=release_one)
    try:
        releaser.start()
        proc = peer_pytest(box, second_user, "op_tests/test_stamped.py", "--gpu-wait", "30")
        releaser.join()
        art = box.artifact("stamped")
        assert art.verdict == "PASS", (art.reasons, text(proc)[-2000:])
        assert art.gpu.index == 2, "the one GPU whose lock was released"
        raw = (box.tickets / "T-1" / art.raw_output).read_text()
        started = float(raw.split("gv-started ", 1)[1].split()[0])
        assert started > released["t"], "the command ran while the other user still held the lock"
    finally:
        for h in holders:
            h.kill()
            h.wait()
    assert {uid for uid, _ in lock_files(box).values()} == {0}, "lock files keep their owner"


def test_an_unwritable_tickets_folder_stops_before_any_gpu_tool_or_container(shared_host, second_user, world_dir):
    """The tickets folder: another user's 0755 folder, then a file. One line naming it; no GPU tool ran
    (the tools log every call) and no container got an exec."""
    box = shared_host
    calls = world_dir / "tool-calls.log"
    logged = world_dir / "logged-bin"
    logged.mkdir()
    for tool in ("rocm-smi", "amd-smi", "rocminfo", "nvidia-smi"):
        (logged / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexec {box.sim_bin}/{tool} "$@"\n')
        (logged / tool).chmod(0o755)
    calls.write_text("")
    calls.chmod(0o666)
    os.chmod(box.tickets, 0o755)  # root's: the second user cannot write in it
    env = {"PATH": f"{logged}:{box.sim_bin}:/usr/local/bin:/usr/bin:/bin"}
    cmd = [
        second_user.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "pytest_gpuverify.plugin",
        "--gpu-verify",
        "--gpu-env",
        str(box.env_path),
        "--ticket",
        "T-9",
        "op_tests/test_rmsnorm2d.py",
    ]
    proc = second_user.run(cmd, cwd=box.repo, env=env)
    out = text(proc)
    assert proc.returncode == 4, out  # a usage error: pytest stops before collecting
    line = next(ln for ln in out.splitlines() if "cannot write" in ln)
    assert f"cannot write {box.tickets} (owner root, mode 0755): no write permission" in line and "Fix:" in line
    assert calls.read_text() == "", "a GPU tool ran"
    assert box.exec_ids() == [], "a container was touched"
    assert not (box.tickets / "T-9").exists()
    # a file where the folder should be: the same, as root
    os.rename(box.tickets, box.tickets.with_name("tickets.away"))
    box.tickets.write_text("not a folder\n")
    proc = box.pytest("op_tests/test_rmsnorm2d.py", ticket="T-9", env=env)
    assert proc.returncode == 4 and f"cannot write {box.tickets} (owner root, mode 0644): it is a file" in text(proc)
    assert calls.read_text() == "" and box.exec_ids() == []
    # the logged tools do log: the doctor reads the GPUs through them
    subprocess.run(
        [__import__("sys").executable, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(box.env_path)],
        env=dict(os.environ, **env),
        capture_output=True,
    )
    assert "rocm" in calls.read_text() or "amd-smi" in calls.read_text()


def test_doctor_says_when_the_tickets_folder_cannot_be_written(shared_host, second_user):
    box = shared_host
    os.chmod(box.tickets, 0o755)
    proc = second_user.run(
        [second_user.python, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(box.env_path)],
        env={"PATH": f"{box.sim_bin}:/usr/local/bin:/usr/bin:/bin"},
    )
    out = text(proc)
    assert proc.returncode == 1, out
    assert f"tickets   cannot write {box.tickets} (owner root, mode 0755)" in out
    assert (
        out.strip().splitlines()[-1].startswith("NOT READY") and f"tickets folder {box.tickets} is not writable" in out
    )
    os.chmod(box.tickets, 0o1777)
    out = text(
        second_user.run(
            [second_user.python, "-m", "pytest_gpuverify.cli.main", "doctor", "--gpu-env", str(box.env_path)],
            env={"PATH": f"{box.sim_bin}:/usr/local/bin:/usr/bin:/bin"},
        )
    )
    assert f"tickets   {box.tickets} writable (owner root, mode 1777)" in out, out


@pytest.mark.slow
def test_a_team_shares_one_ticket_folder(shared_host, second_user):
    """Root made T-1 first, in the team's 1777 tickets folder, so T-1 keeps the sticky bit; the second
    user adds a run of the same topic: root's artifact cannot be moved aside by another user, so the
    second user's goes beside it, and both are readable by the team."""
    box = shared_host
    trust = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}  # root, in
    proc = box.pytest("op_tests/test_rmsnorm2d.py", "--gpu-container", "none", env=trust)  # the peer's checkout
    assert box.artifact("rmsnorm2d").verdict == "PASS", text(proc)[-2000:]
    ticket = box.tickets / "T-1"
    assert stat.S_IMODE(ticket.stat().st_mode) == 0o1777, "a new ticket folder takes the tickets folder's bits"
    proc = peer_pytest(box, second_user, "op_tests/test_rmsnorm2d.py")
    owners = {p.name: p.stat().st_uid for p in ticket.glob("bench_rmsnorm2d*.json")}
    assert owners["bench_rmsnorm2d.json"] == 0 and sorted(owners.values()) == [0, second_user.uid], owners
    from pytest_gpuverify.records.artifact import read_artifact

    theirs = next(ticket / name for name, uid in owners.items() if uid == second_user.uid)
    assert read_artifact(theirs).verdict == "PASS", text(proc)[-2000:]
    assert stat.S_IMODE((box.tickets / ".gpuverify.lock").stat().st_mode) == 0o666


def test_an_artifact_that_cannot_be_written_is_one_line_naming_it(shared_host, second_user):
    """A sticky ticket folder holding root's artifact of the topic: the second user cannot move it
    aside. The run's line names the file, its owner and mode, and the fix; the exit is non-zero."""
    box = shared_host
    ticket = box.tickets / "T-1"
    ticket.mkdir()
    os.chmod(ticket, 0o1777)
    theirs = ticket / "bench_rmsnorm2d.json"
    theirs.write_text("{}")
    proc = peer_pytest(box, second_user, "op_tests/test_rmsnorm2d.py")
    out = text(proc)
    line = next((ln for ln in out.splitlines() if ln.startswith("gpuverify: cannot write")), None)
    assert line, out[-3000:]
    assert (
        line.startswith(
            f"gpuverify: cannot write {theirs} (owner root, mode 0644): cannot move it aside to bench_rmsnorm2d."
        )
        and "Operation not permitted. Fix: its owner removes or renames it" in line
    )
    assert proc.returncode == 1 and theirs.read_text() == "{}", "their artifact is untouched"
    ours = Path(line.split("this run's artifact is ", 1)[1])
    assert ours.parent == ticket and ours.stat().st_uid == second_user.uid, "the result is not lost"
    from pytest_gpuverify.records.artifact import read_artifact

    assert read_artifact(ours).verdict == "PASS" and list(ticket.glob("bench_rmsnorm2d.*.log"))
