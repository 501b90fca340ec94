"""How a session on GPU hosts starts (remote/sshmux.py, remote/gateways.py), against real sshd hosts:
the preflight's connection is each host's master for the session, and the workers' gateways start
all at once, each handed to xdist's own call for its spec."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import execnet
import pytest

from pytest_gpuverify.config.envfile import load_env_file
from pytest_gpuverify.remote.preflight import check_hosts, ssh_base
from pytest_gpuverify.remote.sshmux import SHARE_VARIABLE, shared_ssh
from pytest_gpuverify.remote.txspec import tx_specs

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


def _master_alive(shared, hosts, alias: str) -> bool:
    argv = ["ssh", "-F", str(hosts.ssh_config), *shared.options(), "-O", "check", alias]
    return subprocess.run(argv, capture_output=True, timeout=20, stdin=subprocess.DEVNULL).returncode == 0


def test_sharing_is_off_by_the_variable_and_its_folder_is_short():
    assert shared_ssh({SHARE_VARIABLE: "0"}) is None
    shared = shared_ssh({})
    assert shared is not None
    try:
        assert len(shared.folder) + 41 <= 100 and " " not in shared.folder
        assert "ControlMaster=auto" in shared.options() and f"ControlPath={shared.folder}/%C" in shared.options()
    finally:
        shared.close([], None)
    assert not Path(shared.folder).exists()


def test_the_preflights_connection_carries_later_sessions_until_closed(two_hosts):  # noqa: F811
    """After the preflight, hostB's sshd stops listening: a new connection is refused, but a session
    over the preflight's connection still runs there; once closed, the master is gone."""
    env = load_env_file(two_hosts.controller_env)
    host_b = two_hosts["hostB"]
    row = env.host("hostB")
    shared = shared_ssh({})
    config = str(two_hosts.ssh_config)
    try:
        checks = check_hosts([row], env.path, 10, config, shared)
        assert checks[0].problem is None and checks[0].unreachable is None and checks[0].hostname == "hostB"
        assert _master_alive(shared, two_hosts, host_b.alias)
        host_b.proc.send_signal(signal.SIGTERM)  # the listener ends; the established connection stays
        host_b.proc.wait(10)
        alone = subprocess.run(
            [*ssh_base(host_b.alias, 5, config), "hostname"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert alone.returncode == 255  # nobody listens for a new connection
        shared_run = subprocess.run(
            [*ssh_base(host_b.alias, 5, config, shared), "hostname"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert shared_run.returncode == 0 and shared_run.stdout.strip() == "hostB"
    finally:
        shared.close([host_b.alias], config)
    assert not _master_alive(shared, two_hosts, host_b.alias)
    assert not Path(shared.folder).exists()


class _NodeManager:
    """What start_at_once uses of xdist's NodeManager: its group, and the copy of pytest per host."""

    def __init__(self, group) -> None:
        self.group = group
        self.copied: list[str] = []

    def rsync_roots(self, gateway) -> None:
        self.copied.append(gateway.id)


def test_gateways_start_at_once_and_xdist_gets_each_one(two_hosts):  # noqa: F811
    from pytest_gpuverify.remote.gateways import start_at_once

    env = load_env_file(two_hosts.controller_env)
    specs = [
        execnet.XSpec(f"execmodel=main_thread_only//{s}")
        for s in tx_specs(list(env.hosts), None, str(two_hosts.ssh_config), 10)
    ]
    group = execnet.Group(execmodel="main_thread_only")
    for spec in specs:
        group.allocate_id(spec)
    manager = _NodeManager(group)
    spans: dict[str, tuple[float, float]] = {}
    make = group.makegateway

    def timed(spec):
        began = time.monotonic()
        gateway = make(spec)
        spans[spec.id] = (began, time.monotonic())
        return gateway

    group.makegateway = timed
    try:
        start_at_once(manager, specs)
        assert max(b for b, _ in spans.values()) < min(e for _, e in spans.values())  # all were under way at once
        assert sorted(gw.id for gw in group) == ["gw0", "gw1", "gw2", "gw3"]  # made before xdist asks
        assert sorted(manager.copied) == ["gw0", "gw2"]  # pytest copied once per host folder (threads end in any order)
        pids = {}
        for spec in specs:  # xdist's setup_node, in order
            gateway = group.makegateway(spec)
            assert gateway is group[spec.id] and gateway._cache_rinfo is not None
            pids[spec.id] = gateway._rinfo().pid
        assert len(set(pids.values())) == 4
        hosts = {
            gid: group[gid].remote_exec("import socket; channel.send(socket.gethostname())").receive(20) for gid in pids
        }
        assert hosts == {"gw0": "hostA", "gw1": "hostA", "gw2": "hostB", "gw3": "hostB"}
        restarted = execnet.XSpec(str(specs[0]))  # xdist restarting a worker: same spec, a new id
        group.allocate_id(restarted)
        again = group.makegateway(restarted)
        assert again.id not in pids and again._rinfo().pid not in pids.values()
    finally:
        group.terminate(10)
