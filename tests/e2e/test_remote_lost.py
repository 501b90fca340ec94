"""A GPU host whose sshd dies while its target runs, against real sshd hosts (tests/sshd_hosts.py): the
session ends with its summary (no INTERNALERROR, no worker restarted against the dead host), the
target is INCONCLUSIVE naming the lost connection and where its log stays, and the host's own
artifact says the connection to the controller was lost, not Ctrl-C."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pytest_gpuverify.records.artifact import read_artifact

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import ssh_hosts, sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


@pytest.fixture
def two_hosts(tmp_path_factory, docker_client):
    with ssh_hosts(tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 1), ("hostB", 1)]) as hosts:
        yield hosts


def _wait_for(predicate, proc, what: str, limit_s: float = 120) -> None:
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"{what} never happened")


def test_a_host_lost_mid_run_ends_its_target_inconclusive_with_the_summary(two_hosts):
    host_b = two_hosts["hostB"]
    folder = host_b.tickets / "LOST"
    no_checkout = two_hosts.root / "no-checkout"
    no_checkout.mkdir()
    proc = two_hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "LOST",
        "-n",
        "1",
        "op_tests/test_sleep.py",
        cwd=no_checkout,
        popen=True,
        env={"GPUVERIFY_SSH_TIMEOUT": "5"},
    )

    def sleeping() -> bool:
        logs = list(folder.glob("bench_sleep.*.log")) if folder.exists() else []
        return bool(logs) and b"sleeping" in logs[0].read_bytes()

    _wait_for(sleeping, proc, "the target's start")
    log_on_host = next(folder.glob("bench_sleep.*.log"))
    host_b.kill_sshd()
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out and "HostNotFound" not in out, out
    assert (
        "replacing crashed worker" not in out
        and "worker gw0 is not replaced: the connection to host hostB was lost" in out
    )
    summary = out.split("gpuverify ==")[1]
    reason = f"the connection to host hostB was lost while it ran; its log stays on hostB at {folder}/bench_sleep.*.log"
    assert "INCONCLUSIVE" in summary and reason in summary, summary
    landed = read_artifact(two_hosts.root / "controller-tickets" / "LOST" / "bench_sleep.json")
    assert landed.verdict == "INCONCLUSIVE" and landed.host == "hostB" and landed.reasons[0].startswith(reason)
    assert log_on_host.is_file()
    # the worker on hostB stopped its command when its ssh ended, and wrote its own artifact
    on_host = folder / "bench_sleep.json"
    _wait_for(on_host.is_file, proc, "the host's own artifact", 60)
    art = read_artifact(on_host)
    assert art.verdict == "INCONCLUSIVE" and art.run.interrupted is not None
    assert "connection to the controller was lost" in art.run.interrupted and "Ctrl-C" not in " ".join(art.reasons)
