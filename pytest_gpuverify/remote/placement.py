"""Which GPU host runs which target of a fan-out session: decided once, at collection, from the
node ids the workers collected and the Hosts rows' GPU counts. Pure functions (no xdist, no ssh):
remote/scheduler.py feeds each host's share to that host's workers only.

A worker on a GPU host marks a target that needs more than one GPU by suffixing its node id with
``@gpus=N`` (xdist's own ``--dist loadgroup`` suffixes node ids with ``@<group>`` the same way), and a
target whose topic is not the one its node id gives (a declared ``topic``) with ``@topic=T`` before
it: the node ids are the only thing a worker tells the controller at collection."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

GPUS_SUFFIX = "@gpus="
TOPIC_SUFFIX = "@topic="
_SUFFIXES = re.compile(r"(?:@topic=(?P<topic>[A-Za-z0-9._-]+))?(?:@gpus=(?P<gpus>\d+))?$")


def marked_nodeid(nodeid: str, gpus: int, topic: str = "") -> str:
    """The node id a worker sends for a target needing ``gpus`` GPUs and named ``topic`` (unchanged for
    one GPU and the topic the node id gives)."""
    out = nodeid
    if topic and topic != _named_topic(nodeid):
        out += f"{TOPIC_SUFFIX}{topic}"
    return f"{out}{GPUS_SUFFIX}{gpus}" if gpus > 1 else out


def gpus_of(nodeid: str) -> int:
    found = _SUFFIXES.search(nodeid)
    return int(found.group("gpus")) if found and found.group("gpus") else 1


def plain_nodeid(nodeid: str) -> str:
    return _SUFFIXES.sub("", nodeid, count=1)


def target_name(nodeid: str) -> str:
    """The target's name: a GPU target item is named for its target (face/collectors.py GpuTargetItem)."""
    return plain_nodeid(nodeid).rsplit("::", 1)[-1]


def target_path(nodeid: str) -> str:
    return plain_nodeid(nodeid).split("::", 1)[0]


@dataclass(frozen=True)
class HostSlots:
    name: str
    gpus: int


@dataclass
class Placement:
    by_host: dict[str, list[int]] = field(default_factory=dict)  # host -> collection indices, in order
    unplaced: dict[int, str] = field(default_factory=dict)  # index -> why no host can run it

    def host_of(self, index: int):
        return next((h for h, idx in self.by_host.items() if index in idx), None)


def place(nodeids: list[str], hosts: list[HostSlots]) -> Placement:
    """Each target to one host, deterministically: the targets needing most GPUs first (then in
    collection order), each to the host with enough GPUs whose load per GPU would be least after it
    (ties: the host listed first). A target needing more GPUs than any host has is left unplaced,
    with the reason naming the biggest host."""
    placement = Placement(by_host={h.name: [] for h in hosts})
    load = {h.name: 0 for h in hosts}
    order = sorted(range(len(nodeids)), key=lambda i: (-gpus_of(nodeids[i]), i))
    for index in order:
        need = gpus_of(nodeids[index])
        fits = [h for h in hosts if h.gpus >= need]
        if not fits:
            biggest = max(hosts, key=lambda h: h.gpus, default=None)
            have = f"the most any host has is {biggest.gpus} ({biggest.name})" if biggest else "no host is given"
            placement.unplaced[index] = (
                f"target {target_name(nodeids[index])} needs {need} GPUs; {have}. "
                "Fix: add a host with enough GPUs to --gpu-hosts, or lower `gpus` "
                "in its declaration"
            )
            continue
        best = min(fits, key=lambda h: ((load[h.name] + need) / max(h.gpus, 1), hosts.index(h)))
        load[best.name] += need
        placement.by_host[best.name].append(index)
    for indices in placement.by_host.values():
        indices.sort()
    return placement


def topic_of(nodeid: str) -> str:
    """The topic a target's artifact is named for when the controller writes it (the target never
    ran): the worker's ``@topic=`` mark, else what the node id gives."""
    found = _SUFFIXES.search(nodeid)
    return found.group("topic") if found and found.group("topic") else _named_topic(nodeid)


def _named_topic(nodeid: str) -> str:
    """A test file's name as targets.topic_for has it; a declared target's name otherwise."""
    from pytest_gpuverify.config.targets import safe_topic, topic_for

    path = Path(target_path(nodeid))
    if path.suffix == ".py":
        return topic_for(path)
    return safe_topic(target_name(nodeid))
