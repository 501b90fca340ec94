"""Like with like: what two artifacts must share before their rows are paired.

Each side's identity is a few named facts read from its artifact. Two artifacts whose facts differ
are not compared unless the user names each differing fact as allowed (``--may-differ``); an allowed
difference is kept with the comparison so every output shows it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.records.machine import held, joined, partition_text, power_text

CHECKOUT = "<checkout>"
# name -> what it is, as the help and the refusal say it
FIELDS: dict[str, str] = {
    "target": "target name and kind",
    "command": "command with its arguments (checkout paths normalised)",
    "gpu_model": "GPU model",
    "gpu_arch": "GPU arch",
    "gpu_count": "GPUs held",
    "image": "container image (by digest where both are known)",
    "torch": "torch version",
    "hip": "HIP version",
    "rocm": "ROCm version",
    "triton": "Triton version",
    "place": "ran in a container or on the host",
    "cache": "cold or warm caches",
    "regime": "timing regime",
    "driver": "GPU driver version",
    "partition": "compute/memory partition mode (MIG mode on NVIDIA) of the GPUs held",
    "power_cap": "power cap of the GPUs held",
}
# the machine's facts (records/machine.py): held equal where both sides recorded them; an artifact
# written before they were recorded is noted, not refused
MACHINE_FIELDS = ("driver", "partition", "power_cap")


@dataclass(frozen=True)
class Difference:
    field: str
    base: str | None
    head: str | None

    def describe(self) -> str:
        return f"{self.field} ({FIELDS[self.field]}): base {self.base or 'unknown'}, head {self.head or 'unknown'}"

    def as_dict(self) -> dict:
        return asdict(self)


def checkout_paths(art: Artifact) -> list[str]:
    """Where this artifact's checkout lay: its repos, its working folder, an A/B base worktree, a synced copy."""
    paths = [r.path for r in art.repos] + [art.workdir or ""]
    if art.ab is not None:
        paths.append(art.ab.base_worktree or "")
    if art.synced is not None:
        paths += [art.synced.host_path, art.synced.local_path]
    return sorted({p.rstrip("/") for p in paths if p and p.rstrip("/")}, key=len, reverse=True)


def normalised_command(art: Artifact) -> str | None:
    command = art.command
    if command is None and art.target is not None and art.target.command:
        command = " ".join([*art.target.command, *art.target.args])
    if command is None:
        return None
    for path in checkout_paths(art):
        command = command.replace(path, CHECKOUT)
    return command


def identity(art: Artifact) -> dict[str, str | None]:
    target, versions = art.target, art.versions
    gpus = art.gpus or [art.gpu]
    return {
        "target": f"{target.name} ({target.kind})" if target else None,
        "command": normalised_command(art),
        "gpu_model": ", ".join(sorted({g.name or "?" for g in gpus})),
        "gpu_arch": ", ".join(sorted({g.arch or "?" for g in gpus})),
        "gpu_count": str(len(art.gpus)) if art.gpus else None,
        "image": art.image,
        "torch": versions.torch,
        "hip": versions.hip,
        "rocm": versions.rocm,
        "triton": versions.triton,
        "place": "container" if art.container else "host",
        "cache": "cold" if art.cold else "warm",
        "regime": target.regime if target else None,
        **machine_facts(art),
    }


def machine_facts(art: Artifact) -> dict[str, str | None]:
    """The driver, and the partition mode and power cap of the GPUs the run held (all of them when it held none)."""
    if art.machine is None:
        return dict.fromkeys(MACHINE_FIELDS)
    gpus = held(art.machine, [g.index for g in art.gpus])
    return {
        "driver": art.machine.driver,
        "partition": joined(partition_text(g) for g in gpus),
        "power_cap": joined(power_text(g.power_cap_w) for g in gpus),
    }


def differences(base: Artifact, head: Artifact) -> list[Difference]:
    return fact_differences(identity(base), identity(head), (base.image_digest, head.image_digest))


def fact_differences(
    mine: dict[str, str | None], theirs: dict[str, str | None], digests: tuple[str | None, str | None] = (None, None)
) -> list[Difference]:
    """The facts (as :func:`identity` reads them) that differ; the image by content where both sides'
    ``digests`` are known."""
    if digests[0] and digests[1]:
        mine, theirs = {**mine, "image": digests[0]}, {**theirs, "image": digests[1]}
    return [
        Difference(name, mine.get(name), theirs.get(name))
        for name in FIELDS
        if mine.get(name) != theirs.get(name)
        and (name not in MACHINE_FIELDS or (mine.get(name) is not None and theirs.get(name) is not None))
    ]


def unrecorded(mine: dict[str, str | None], theirs: dict[str, str | None], labels: tuple[str, str]) -> list[str]:
    """A note per machine fact one side did not record (an artifact written before the machine was), which
    therefore was not held equal."""
    return [
        f"{name} ({FIELDS[name]}) not recorded by {label}: not held equal"
        for name in MACHINE_FIELDS
        for label, facts, other in ((labels[0], mine, theirs), (labels[1], theirs, mine))
        if facts.get(name) is None and other.get(name) is not None
    ]


def unknown_names(names: Iterable[str]) -> list[str]:
    return [n for n in names if n not in FIELDS]


# how a note of a machine's change begins: the PR comment and issue body show these notes (reporting/pr_comment.py)
CHANGE_NOTE_START = ("the driver changed from ", "the GPU firmware (VBIOS) changed from ")
CHANGE_NOTE_END = " at this point: a change of the rows here may be the machine's, not the commits'"


def change_notes(allowed: Iterable[Difference]) -> list[str]:
    """A note per driver change among the allowed differences (``--may-differ driver``)."""
    return [
        f"{CHANGE_NOTE_START[0]}{d.base} to {d.head}{CHANGE_NOTE_END}"
        for d in allowed
        if d.field == "driver" and d.base and d.head
    ]
