"""xdist's scheduler for a session on GPU hosts (``pytest_xdist_make_scheduler``): each target is tied
to one host at collection (remote/placement.py) and load-balanced over that host's workers only, so a
host that does not answer never sends its targets to another host. It implements xdist's
``Scheduling`` protocol (xdist/scheduler/protocol.py); the decisions are placement.py's."""

from __future__ import annotations

from pytest_gpuverify.remote.placement import HostSlots, Placement, place
from pytest_gpuverify.remote.txspec import host_of_spec


class HostScheduler:
    def __init__(self, config, hosts: list[HostSlots], log=None) -> None:
        import xdist.workermanage  # type: ignore[import-untyped]

        # the --tx specs' reader: parse_spec_config before xdist 3.6 renamed it
        specs = getattr(xdist.workermanage, "parse_tx_spec_config", None) or xdist.workermanage.parse_spec_config
        self.numnodes = len(specs(config))
        self.hosts = hosts
        self.node2collection: dict = {}
        self.node2pending: dict = {}  # the deadline watcher (controller.py) reads it too
        self.collection: list[str] | None = None
        self.placement: Placement | None = None
        self.pending: dict[str, list[int]] = {}  # host -> indices not yet sent
        self.lost: dict[str, list[int]] = {}  # host -> indices left when its last worker ended
        self.starting: dict[str, set[str]] = {}  # host -> ids of workers xdist restarts there, not yet ready
        self.config = config

    @staticmethod
    def host(node) -> str:
        return host_of_spec(node.gateway.spec) or "?"

    @property
    def nodes(self) -> list:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or any(self._live_pending().values()):
            return False
        return all(len(p) < 2 for p in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return any(self._live_pending().values()) or any(self.node2pending.values())

    def _live_pending(self) -> dict[str, list[int]]:
        """What hosts with a worker, up or being restarted, still have to run (a host whose workers all
        ended for good leaves its share to the controller, which ends it INCONCLUSIVE)."""
        live = {self.host(n) for n in self.node2pending} | {h for h, ids in self.starting.items() if ids}
        waiting = {h: p for h, p in self.pending.items() if h in live}
        waiting.update({h: p for h, p in self.lost.items() if h in live and p})
        return waiting

    def worker_starting(self, host: str, worker: str) -> None:
        """xdist started a worker's gateway on ``host`` after this scheduler began (a crashed worker's
        replacement): the host's share waits for it instead of ending the session."""
        self.starting.setdefault(host, set()).add(worker)

    def worker_down(self, node) -> None:
        """A worker ended (xdist's node down): one that never became ready is no longer awaited, or
        a replacement that died starting would hold its host's share, and the session, forever."""
        self.starting.get(self.host(node), set()).discard(node.gateway.id)

    def add_node(self, node) -> None:
        self.node2pending[node] = []
        host = self.host(node)
        self.starting.get(host, set()).discard(node.gateway.id)
        if host in self.lost:  # a restarted worker of a host whose workers had all ended
            self.pending.setdefault(host, []).extend(self.lost.pop(host))

    def add_node_collection(self, node, collection) -> None:
        self.node2collection[node] = list(collection)
        if self.collection is not None and list(collection) != self.collection:
            self._differs(node)
        elif self.collection is not None:
            self._feed(node)

    def mark_test_complete(self, node, item_index, duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self._feed(node)

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        index = self.collection.index(item)
        host = self.placement.host_of(index) if self.placement else None
        self.pending.setdefault(host or "?", []).insert(0, index)
        for node in self.nodes:
            self._feed(node)

    def remove_pending_tests_from_node(self, node, indices) -> None:
        raise NotImplementedError("GPU hosts are fed one target at a time; nothing is taken back")

    def remove_node(self, node) -> str | None:
        pending = self.node2pending.pop(node)
        host = self.host(node)
        crash = self.collection[pending.pop(0)] if pending and self.collection is not None else None
        self.pending.setdefault(host, [])[:0] = pending
        if not any(self.host(n) == host for n in self.node2pending) and self.pending.get(host):
            self.lost.setdefault(host, []).extend(self.pending.pop(host))  # the controller ends them INCONCLUSIVE
        for other in self.nodes:
            self._feed(other)
        return crash

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            collections = list(self.node2collection.values())
            if any(c != collections[0] for c in collections):
                self._differs(next(n for n, c in self.node2collection.items() if c != collections[0]))
                return
            self.collection = collections[0]
            self.placement = place(self.collection, self.hosts)
            self.pending = {h: list(i) for h, i in self.placement.by_host.items()}
        for want in (1, 2):  # round the host's workers: three targets on two workers are 2 + 1, not 2 + 0 + 1
            for node in self.nodes:
                self._feed(node, want)

    def _feed(self, node, want: int = 2) -> None:
        """Keep two targets queued on ``node`` (an xdist worker runs one only once it knows the
        next, or is told to shut down); shut it down once its host has nothing left to send."""
        if self.collection is None or node not in self.node2pending or node.shutting_down:
            return
        queue, host_pending = self.node2pending[node], self.pending.get(self.host(node), [])
        sent: list[int] = []
        while host_pending and len(queue) + len(sent) < want:
            sent.append(host_pending.pop(0))
        if sent:
            queue.extend(sent)
            node.send_runtest_some(sent)
        if not host_pending:
            node.shutdown()

    def _differs(self, node) -> None:
        from xdist.report import report_collection_diff  # type: ignore[import-untyped]

        first = next(iter(self.node2collection.values()))
        msg = report_collection_diff(first, self.node2collection[node], "first worker", node.gateway.id)
        if msg:
            self.config.hook.pytest_collectreport(report=_collection_error(msg))


def _collection_error(msg: str):
    import pytest

    return pytest.CollectReport("gpuverify-hosts", "failed", longrepr=msg, result=[])
