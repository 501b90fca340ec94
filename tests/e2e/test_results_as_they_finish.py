"""Each target's results are written as the target ends: a session killed with SIGKILL after 3 of 5
targets keeps 3 artifacts (signed, in the history store and the CI summary), each passing `gpuverify
check`; the 4th target's raw log is named as a run still going while the session lives, and as stopped
before it wrote its artifact once it is gone."""

from __future__ import annotations

import getpass
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

SIGNER = getpass.getuser()
FINISHED = {
    "op_tests/test_rmsnorm2d.py": "PASS",
    "op_tests/test_gemm_a8w8.py": "PASS",
    "op_tests/test_moe_2stage.py": "FAIL",
}
KILLED, NEVER = "op_tests/test_sleep.py", "op_tests/test_no_check.py"


def gv(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )


def signed(sandbox, root: Path) -> Path:
    """The env file with a Signing row for this user; returns the allowed-signers file."""
    key = root / "keys" / "id_ed25519"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuverify-test", "-f", str(key)], check=True)
    allowed = root / "allowed_signers"
    allowed.write_text(f'{SIGNER} namespaces="gpuverify" {Path(str(key) + ".pub").read_text().strip()}\n')
    text = sandbox.env_path.read_text()
    sandbox.env_path.write_text(text + f"\n## Signing\n\n| signer | key |\n|---|---|\n| {SIGNER} | {key} |\n")
    return allowed


def wait_for(what, timeout: float = 240.0, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = what()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the session ended early (exit {proc.returncode}): "
                f"{proc.stdout.read().decode(errors='replace')[-3000:]}"
            )
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_kill_9_after_3_of_5_targets_keeps_3_checked_artifacts_and_names_the_stopped_one(sandbox, tmp_path):
    allowed = signed(sandbox, tmp_path)
    summary, store = tmp_path / "summary.md", tmp_path / "history.db"
    ticket = sandbox.tickets / "T-1"
    proc = sandbox.pytest(
        *FINISHED,
        KILLED,
        NEVER,
        "--gpu-container",
        "none",
        "--gpu-timeout",
        "600",
        f"--gpu-ci-summary={summary}",
        f"--gpu-history={store}",
        popen=True,
    )
    try:

        def sleeping():
            logs = list(ticket.glob("bench_sleep.*.log")) if ticket.is_dir() else []
            return logs if logs and b"sleeping" in logs[0].read_bytes() else None

        [log] = wait_for(sleeping, proc=proc)
        # the session lives: its log is a run going on, never "stopped"
        live = gv("check", str(ticket))
        assert f"RUNNING {log}: no artifact yet: its session is still running (pid " in live.stdout, live.stdout
        assert "STOPPED" not in live.stdout, live.stdout
        # what the three finished targets left is on disk before the session ends
        arts = sorted(p.name for p in ticket.glob("bench_*.json"))
        assert arts == ["bench_gemm_a8w8.json", "bench_moe_2stage.json", "bench_rmsnorm2d.json"], arts
        rows = re.findall(r"^\| \*\*(\w+)\*\* \| `([^`]+)`", summary.read_text(), re.M)
        assert sorted(v for v, _ in rows) == sorted(FINISHED.values()), summary.read_text()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    for topic, verdict in (("rmsnorm2d", "PASS"), ("gemm_a8w8", "PASS"), ("moe_2stage", "FAIL")):
        art = ticket / f"bench_{topic}.json"
        assert (ticket / f"bench_{topic}.json.sig").is_file(), topic
        done = gv("check", str(art), "--allowed-signers", str(allowed))
        assert done.returncode == 0 and f"{art}: OK (" in done.stdout and "verified" in done.stdout, done.stdout
        assert sandbox.artifact(topic).verdict == verdict
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
    time.sleep(1.1)  # the guard stops the command once its session is gone
    folder = gv("check", str(ticket), "--allowed-signers", str(allowed))
    assert folder.returncode == 0, folder.stdout + folder.stderr
    assert (
        f"STOPPED {log}: a raw log no artifact names: its run stopped before it wrote its artifact "
        f"(last line: " in folder.stdout
    ), folder.stdout
    assert "RUNNING" not in folder.stdout and folder.stdout.count("STOPPED") == 1, folder.stdout
    assert not list(ticket.glob("bench_no_check.*")), "the 5th target never started"
