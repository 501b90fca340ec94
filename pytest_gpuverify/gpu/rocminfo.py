"""Pure parsers for ``rocminfo``: the arch of the first GPU agent, and every GPU agent's facts.

CPU agents come first; GPU agents follow in KFD node order. Only an agent's own ``Name:`` line (two
spaces deep) is its name: ISA lines (``amdgcn-amd-amdhsa--gfx942:...``, ``gfx9-4-generic``) sit deeper.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify.gpu.rocm_formats import _arch, _int, _str  # the shared cell readers


class RocminfoAgent(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    arch: str | None = None
    name: str | None = None  # Marketing Name
    uuid: str | None = None
    node: int | None = None


_ARCH_LINE = re.compile(r"^\s+Name:\s+(gfx[0-9a-f]+)\s*$")
_AGENT_FIELD = re.compile(r"^  (\S[^:]*?):\s*(.*?)\s*$")  # exactly two spaces: ISA names sit deeper


def parse_rocminfo_arch(text: str) -> str | None:
    """The first GPU agent's gfx target. CPU agents never match and ISA lines
    (``amdgcn-amd-amdhsa--gfx942:...``, ``...--gfx9-4-generic:...``) do not either."""
    for line in (text or "").splitlines():
        m = _ARCH_LINE.match(line)
        if m:
            return m.group(1)
    return None


def parse_rocminfo_gpus(text: str) -> list[RocminfoAgent]:
    """GPU agents in listed (KFD node) order. Also reads ``grep Name:``-style excerpts without
    ``Agent N`` headers, where a new top-level ``Name:`` starts a new agent."""
    agents: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in (text or "").splitlines():
        if re.fullmatch(r"Agent\s+\d+\s*", line):
            current = {}
            agents.append(current)
            continue
        m = _AGENT_FIELD.match(line)
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        if key == "Name" and (current is None or "Name" in current):
            current = {}
            agents.append(current)
        if current is not None:
            current.setdefault(key, value)
    out = []
    for agent in agents:
        arch = _arch(agent.get("Name"))
        kind = agent.get("Device Type")
        if kind == "GPU" or (kind is None and arch):
            uuid = _str(agent.get("Uuid"))
            out.append(
                RocminfoAgent(
                    arch=arch,
                    name=_str(agent.get("Marketing Name")),
                    uuid=None if uuid in (None, "GPU-XX") else uuid,
                    node=_int(agent.get("Node")),
                )
            )
    return out
