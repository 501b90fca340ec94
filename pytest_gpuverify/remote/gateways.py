"""The workers' execnet gateways, started all at once.

xdist sets its workers up one after another (``NodeManager.setup_nodes``): for each, it makes the
gateway (an ssh session, the host's python started and execnet bootstrapped over it, its folder and
environment set), then copies pytest into the first worker folder of each host. On GPU hosts each of
those waits on the network and the host, so 4 workers cost 4 times one. Here, when xdist announces
its specs (``pytest_xdist_setupnodes``), every gateway is made at once, each host's copy of pytest is
sent once, all hosts at once, and xdist's own calls for each spec then take the gateway already made.
What xdist does with it after (its hooks, the worker's start) is unchanged. A gateway that failed
here is made again by xdist's own call, which fails its way (as without this)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any


def start_at_once(nodemanager: Any, specs: list) -> None:
    """Make the gateways of ``specs`` in ``nodemanager.group`` concurrently and hand them to xdist's
    ``group.makegateway`` calls (by the spec's id, which xdist gave each spec up front)."""
    group = nodemanager.group
    make = group.makegateway
    if len(specs) < 2 or any(getattr(spec, "id", None) is None for spec in specs):
        return
    first_of_host = {str(spec): spec.id for spec in reversed(specs)}  # one pytest copy per host folder

    def start(spec):
        gateway = make(spec)
        gateway._rinfo()  # xdist asks next (cached): the round trip is made here, in parallel
        if first_of_host.get(str(spec)) == spec.id:
            nodemanager.rsync_roots(gateway)  # xdist skips a (spec, folder) pair already copied
        return gateway

    with ThreadPoolExecutor(max_workers=min(32, len(specs))) as pool:
        futures = {spec.id: pool.submit(start, spec) for spec in specs}
    started = {}
    for gid, future in futures.items():
        try:
            started[gid] = future.result()
        except Exception:  # execnet's HostNotFound, EOFError, ...: xdist's own call reports it
            if gid in group:  # made, but a later step failed: xdist's call cannot make it twice
                started[gid] = group[gid]

    def makegateway(spec=None):
        gateway = started.pop(getattr(spec, "id", None), None)
        return gateway if gateway is not None else make(spec)  # a restarted worker: a new id, a new gateway

    group.makegateway = makegateway
