"""Hosts that keep the checkout at different paths (each host's env file says where): every worker's
rootdir and node ids come from its own host's Repos rows, against real sshd hosts (tests/sshd_hosts.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.records.artifact import read_artifact

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import ssh_hosts, sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


@pytest.fixture(scope="module")
def apart(tmp_path_factory, docker_client):
    """hostA keeps aiter at <root>/hostA/work/aiter, hostB at <root>/hostB/srv/deep/aiter; the
    controller's env file names a third path, its own."""
    with ssh_hosts(
        tmp_path_factory.mktemp("sshd"),
        docker_client,
        [("hostA", 1), ("hostB", 1)],
        own_checkouts={"hostA": "work/aiter", "hostB": "srv/deep/aiter"},
    ) as hosts:
        yield hosts


def _no_checkout(hosts) -> Path:
    folder = hosts.root / "no-checkout"
    folder.mkdir(exist_ok=True)
    return folder


def _commit_targets(repo: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"op_tests/test_apart{i}.py"
        (repo / name).write_bytes((repo / "op_tests/test_gemm_a8w8.py").read_bytes())
        names.append(name)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "targets"], check=True)
    return names


def test_fan_out_over_hosts_with_different_checkout_paths(apart):
    for host in apart.hosts:
        targets = _commit_targets(host.repo, 2)
    r = apart.pytest("--gpu-hosts", "all", "--ticket", "APART", *targets, cwd=_no_checkout(apart), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Different tests were collected" not in r.stdout + r.stderr
    for i in range(2):
        assert f"PASS         op_tests/test_apart{i}.py::apart{i}" in r.stdout, r.stdout
    ran = {}
    for host in apart.hosts:
        for path in (host.tickets / "APART").glob("bench_*.json"):
            art = read_artifact(path)
            assert art.verdict == "PASS" and art.host == host.name
            assert art.repos and art.repos[0].path == str(host.repo)  # the host's own checkout ran
            ran[art.topic] = host.name
    assert set(ran) == {"apart0", "apart1"} and set(ran.values()) == {"hostA", "hostB"}


def test_one_host_keeps_the_file_in_its_node_id(apart):
    r = apart.pytest("--gpu-host", "hostB", "--ticket", "ONE", "op_tests/test_gemm_a8w8.py", cwd=_no_checkout(apart))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS         op_tests/test_gemm_a8w8.py::gemm_a8w8  gpu " in r.stdout, r.stdout
    art = read_artifact(apart["hostB"].tickets / "ONE" / "bench_gemm_a8w8.json")
    assert art.verdict == "PASS" and art.repos[0].path == str(apart["hostB"].repo)
