"""A GPU host where the workers cannot start, against real sshd hosts (tests/support/sshd_hosts.py): a host
with no env file of its own is one line at the pre-flight; a worker that stops at its start (a stray
pytest.ini in the ssh user's home) stops the session with its reason after a bounded number of
restarts (remote/lost.py's START_TRIES), never replacing worker after worker until a timeout."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import ssh_hosts, sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory, docker_client):
    """bare: no GPUVERIFY_ENV and no ~/.cursor/mstack/env.md in its sessions; stray: its ssh user's
    home holds a pytest.ini with an option no pytest knows; good: a host as it should be."""
    with ssh_hosts(
        tmp_path_factory.mktemp("sshd"),
        docker_client,
        [("bare", 2), ("stray", 2), ("good", 1)],
        without_env=frozenset({"bare"}),
        own_homes=frozenset({"stray"}),
    ) as started:
        (started["stray"].root / "home" / "pytest.ini").write_text("[pytest]\naddopts = --no-such-gpu-option\n")
        (started.root / "no-checkout").mkdir()
        yield started


def test_a_host_without_its_own_env_file_is_one_line_at_the_preflight(hosts):
    began = time.monotonic()
    r = hosts.pytest(
        "--gpu-host",
        "bare",
        "--ticket",
        "NOENV",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
        timeout=120,
    )
    took = time.monotonic() - began
    out = r.stdout + r.stderr
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "replacing crashed worker" not in out and "INTERNALERROR" not in out, out
    lines = [ln for ln in r.stderr.splitlines() if "bare" in ln]
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert (
        "host bare: its workers read the host's own env file, ~/.cursor/mstack/env.md (the default path there)" in line
    )
    assert "the env file does not exist" in line and "Fix: write that file on bare" in line, line
    assert "GPUVERIFY_ENV" in line and "--gpu-env names this machine's file only" in line, line
    assert not (hosts["bare"].root / "home" / ".gpuverify-xdist").exists()  # no worker was started there
    assert took < 60, took


def test_a_worker_that_cannot_start_stops_the_session_with_its_reason(hosts):
    began = time.monotonic()
    r = hosts.pytest(
        "--gpu-host",
        "stray",
        "--ticket",
        "STRAY",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
        timeout=180,
    )
    took = time.monotonic() - began
    out = r.stdout + r.stderr
    assert r.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "INTERNALERROR" not in out, out
    assert out.count("replacing crashed worker") <= 1, out  # the bound: a second death stops the session
    reason = next((ln for ln in out.splitlines() if "host stray: its workers could not start (2 tried" in ln), None)
    assert reason is not None, out
    assert "unrecognized arguments: --no-such-gpu-option" in reason, reason  # the worker's own words
    assert f"inifile: {hosts['stray'].root / 'home' / 'pytest.ini'}" in reason, reason  # what to correct
    assert "Interrupted: host stray: its workers could not start" in out, out
    assert took < 90, took
    # no worker collected, so no target is known to end INCONCLUSIVE: the session says none ran
    assert "no GPU targets ran" in r.stdout, r.stdout


def test_a_good_host_beside_them_still_runs(hosts):
    r = hosts.pytest(
        "--gpu-host",
        "good",
        "--ticket",
        "GOOD",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert (hosts["good"].tickets / "GOOD" / "bench_gemm_a8w8.json").is_file()
