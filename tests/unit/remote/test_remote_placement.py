"""remote/placement.py: which host runs which target, decided at collection (no xdist, no ssh)."""

from pytest_gpuverify.remote.placement import (
    HostSlots,
    gpus_of,
    marked_nodeid,
    place,
    plain_nodeid,
    target_name,
    topic_of,
)

A2, B2 = HostSlots("hostA", 2), HostSlots("hostB", 2)


def ids(n: int) -> list[str]:
    return [f"op_tests/test_fan{i}.py::fan{i}" for i in range(n)]


def test_one_gpu_targets_are_balanced_and_deterministic():
    p = place(ids(8), [A2, B2])
    assert p.by_host == {"hostA": [0, 2, 4, 6], "hostB": [1, 3, 5, 7]}
    assert p.unplaced == {}
    assert place(ids(8), [A2, B2]).by_host == p.by_host  # the same input, the same placement


def test_balance_follows_gpu_counts():
    p = place(ids(6), [HostSlots("big", 4), HostSlots("small", 2)])
    assert len(p.by_host["big"]) == 4 and len(p.by_host["small"]) == 2


def test_a_multi_gpu_target_goes_only_to_a_host_with_enough_gpus():
    nodeids = ids(3) + [marked_nodeid("op_tests/test_tp.py::tp4", 4)]
    p = place(nodeids, [A2, HostSlots("hostC", 4)])
    assert p.host_of(3) == "hostC"
    assert sorted(i for idx in p.by_host.values() for i in idx) == [0, 1, 2, 3]  # each once
    assert p.by_host["hostA"] and 3 not in p.by_host["hostA"]


def test_a_target_needing_more_gpus_than_any_host_is_unplaced_with_a_fix():
    nodeids = ids(2) + [marked_nodeid("op_tests/test_tp.py::tp8", 8)]
    p = place(nodeids, [A2, B2])
    assert 2 not in [i for idx in p.by_host.values() for i in idx]
    assert "target tp8 needs 8 GPUs; the most any host has is 2 (hostA)" in p.unplaced[2]
    assert "Fix:" in p.unplaced[2]
    assert p.host_of(2) is None


def test_node_id_suffix_round_trip():
    nid = marked_nodeid("op_tests/test_tp.py::tp", 2)
    assert nid == "op_tests/test_tp.py::tp@gpus=2"
    assert gpus_of(nid) == 2 and plain_nodeid(nid) == "op_tests/test_tp.py::tp" and target_name(nid) == "tp"
    assert marked_nodeid("x.py::a", 1) == "x.py::a" and gpus_of("x.py::a") == 1


def test_topic_of_a_file_and_a_declared_target():
    assert topic_of("op_tests/test_gemm_a8w8.py::gemm_a8w8") == "gemm_a8w8"
    assert topic_of("gpuverify.toml::gemm-declared@gpus=2") == "gemm-declared"


def test_a_declared_topic_travels_in_the_node_id():
    nid = marked_nodeid("gpuverify.toml::gemm-declared", 2, "gemm_declared")
    assert nid == "gpuverify.toml::gemm-declared@topic=gemm_declared@gpus=2"
    assert topic_of(nid) == "gemm_declared" and gpus_of(nid) == 2
    assert plain_nodeid(nid) == "gpuverify.toml::gemm-declared" and target_name(nid) == "gemm-declared"
    assert topic_of(marked_nodeid("gpuverify.toml::t", 1, "other")) == "other"
    assert (
        marked_nodeid("op_tests/test_gemm_a8w8.py::gemm_a8w8", 1, "gemm_a8w8")
        == "op_tests/test_gemm_a8w8.py::gemm_a8w8"
    )
    assert marked_nodeid("gpuverify.toml::gemm-declared", 1, "gemm-declared") == "gpuverify.toml::gemm-declared"


class _Node:
    """What remote/scheduler.py uses of xdist's WorkerController."""

    def __init__(self, host: str) -> None:
        from types import SimpleNamespace

        from pytest_gpuverify.remote.txspec import HOST_VARIABLE

        self.gateway = SimpleNamespace(spec=SimpleNamespace(env={HOST_VARIABLE: host}), id=f"{host}-w")
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices) -> None:
        self.sent += list(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


# xdist's function that reads the --tx specs (its worker count): renamed in xdist 3.6
_SPECS = (
    "parse_tx_spec_config"
    if hasattr(__import__("xdist.workermanage").workermanage, "parse_tx_spec_config")
    else "parse_spec_config"
)


def _scheduler(hosts):
    from types import SimpleNamespace

    from pytest_gpuverify.remote.scheduler import HostScheduler

    return HostScheduler(SimpleNamespace(), hosts)  # xdist's worker count: its --tx reader, patched


def test_a_crashed_workers_replacement_gets_its_hosts_share(monkeypatch):
    import xdist.workermanage

    monkeypatch.setattr(xdist.workermanage, _SPECS, lambda config: ["a", "b"])
    sched = _scheduler([A2, B2])
    a, b = _Node("hostA"), _Node("hostB")
    collection = ids(4)  # hostA: 0, 2; hostB: 1, 3
    for node in (a, b):
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    assert a.sent == [0, 2] and b.sent == [1, 3]
    sched.mark_test_complete(a, 0)
    sched.mark_test_complete(a, 2)
    assert sched.remove_node(b) == collection[1]  # died running fan1: fan3 is left
    assert sched.tests_finished  # no restart: hostB's share is lost, the controller ends it
    sched.worker_starting("hostB", "hostB-w")  # xdist restarts hostB's worker
    assert not sched.tests_finished and sched.has_pending
    again = _Node("hostB")
    sched.add_node(again)
    sched.add_node_collection(again, collection)
    assert again.sent == [3] and again.shutting_down and not sched.lost
    sched.mark_test_complete(again, 3)
    assert sched.tests_finished


def test_a_replacement_that_dies_starting_is_no_longer_awaited(monkeypatch):
    """xdist's replacement for a crashed worker dies before it is ready (its host went down): the
    host's share is lost (the controller ends it INCONCLUSIVE), and the session can finish. Before,
    the host stayed "starting" and the session waited for it forever."""
    import xdist.workermanage

    monkeypatch.setattr(xdist.workermanage, _SPECS, lambda config: ["a", "b"])
    sched = _scheduler([A2, B2])
    a, b = _Node("hostA"), _Node("hostB")
    collection = ids(4)
    for node in (a, b):
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    sched.mark_test_complete(a, 0)
    sched.mark_test_complete(a, 2)
    sched.remove_node(b)
    replacement = _Node("hostB")
    replacement.gateway.id = "gw9"
    sched.worker_starting("hostB", "gw9")
    assert not sched.tests_finished, "the host's share waits for its replacement"
    sched.worker_down(replacement)  # xdist: node down before it was ever ready (never added)
    assert sched.tests_finished and sched.lost == {"hostB": [3]}
    sched.worker_down(a)  # a ready worker's down changes nothing here (remove_node follows it)
    assert sched.tests_finished
