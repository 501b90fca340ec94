"""Facts about what ran: arch inside the container, the import origin, versions, repo state.

Each is read from the run itself, once per container or worktree per session, and a fact that
cannot be read is ``None`` with the reason, never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.common.threads import Background
from pytest_gpuverify.config.targets import MULTICAST_OFF
from pytest_gpuverify.execute.base import Executor  # a container, or the host itself (a Containers row named host)
from pytest_gpuverify.execute.container import ContainerError
from pytest_gpuverify.place.gitstate import repo_state  # noqa: F401 (re-exported: the run reads repo state through here)
from pytest_gpuverify.records.artifact import Versions

VERSIONS_TIMEOUT_S = 60

# Reads versions without importing torch: `python3 -c "import torch"` takes seconds (5.2 s on an H200 host).
_VERSIONS_SCRIPT = r"""
import json, re, sys, importlib.util as u, importlib.metadata as m
out = {"python": sys.version.split()[0]}
def ver(name):
    try:
        return m.version(name)
    except Exception:
        return None
for dist in ("torch", "triton", "pytorch-triton-rocm"):
    out[dist] = ver(dist)
spec = u.find_spec("torch")
for key in ("hip", "cuda"):
    out[key] = None
if spec and spec.submodule_search_locations:
    for loc in spec.submodule_search_locations:
        try:
            text = open(loc + "/version.py", encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        for key in ("hip", "cuda"):
            hit = re.search(r"^" + key + r"\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
            if hit:
                out[key] = hit.group(1)
try:
    out["rocm"] = open("/opt/rocm/.info/version", encoding="utf-8").read().strip() or None
except OSError:
    out["rocm"] = None
print(json.dumps(out))
"""

_FIND_SPEC = (
    "import importlib.util as u, sys\n"
    "sys.path[:] = sys.argv[2:] + [p for p in sys.path if p]\n"  # the command's own front, not -c's cwd (/)
    "s = u.find_spec(sys.argv[1])\n"
    "print('GPUVERIFY-ORIGIN:' + ((s.origin or list(s.submodule_search_locations or [''])[0]) if s else ''))\n"
)


def container_arch(container: Executor, vendor: str = "rocm") -> tuple[str | None, str | None]:
    """(arch, None) or (None, why), read inside: rocminfo's first GPU agent (ROCm), or the first
    GPU's compute capability as sm_XY (NVIDIA)."""
    if vendor == "nvidia":
        from pytest_gpuverify.gpu.nvidia import arch_from_compute_cap

        code, out = container.capture(
            ["sh", "-c", "nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1"], timeout_s=60
        )
        arch = arch_from_compute_cap(out.decode("utf-8", errors="replace").strip())
        tool = "nvidia-smi"
    else:
        from pytest_gpuverify.gpu.rocminfo import parse_rocminfo_arch

        code, out = container.capture(["sh", "-c", "rocminfo 2>/dev/null"], timeout_s=60)
        arch = parse_rocminfo_arch(out.decode("utf-8", errors="replace"))
        tool = "rocminfo"
    if arch:
        return arch, None
    if code is None:
        return None, f"{tool} timed out in {container.name}"
    return None, f"{tool} in {container.name} printed no GPU (exit {code})"


def import_origin(
    container: Executor, package: str, env: Mapping[str, str], front: Sequence[str] = ()
) -> tuple[str | None, str | None]:
    """Where ``package`` would be imported from with the command's environment ``env`` and the folders it
    puts before its PYTHONPATH (``front``: import_rules.py), checked from ``/``.

    From ``/``, and without the ``''`` that ``python3 -c`` puts first: only what the command itself puts on
    ``sys.path`` counts. ``find_spec`` of a top-level name imports nothing.
    """
    code, out = container.capture(["python3", "-c", _FIND_SPEC, package, *front], env=env, workdir="/", timeout_s=60)
    for line in out.decode("utf-8", errors="replace").splitlines():
        if line.startswith("GPUVERIFY-ORIGIN:"):
            origin = line.split(":", 1)[1].strip()
            return (origin or None), (None if origin else f"{package} is not importable in {container.name}")
    return None, f"import check failed in {container.name} (exit {code})"


def read_versions(container: Executor) -> tuple[Versions, list[str]]:
    code, out = container.capture(["python3", "-c", _VERSIONS_SCRIPT], workdir="/", timeout_s=VERSIONS_TIMEOUT_S)
    try:
        data = json.loads(out.decode("utf-8", errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Versions(), [f"versions: could not be read in {container.name} (exit {code})"]
    versions = Versions(
        rocm=data.get("rocm"),
        torch=data.get("torch"),
        hip=data.get("hip"),
        cuda=data.get("cuda"),
        triton=data.get("triton") or data.get("pytorch-triton-rocm"),
        python=data.get("python"),
    )
    gaps = [
        f"versions: {k} is null: not installed in {container.name}"
        for k in ("torch", "triton")
        if getattr(versions, k) is None
    ]
    if versions.rocm is None and versions.cuda is None:
        gaps.append(f"versions: rocm is null: no /opt/rocm/.info/version in {container.name}")
    return versions, gaps


def environment_of(inspect: dict) -> dict[str, str]:
    """A container's own environment (``docker inspect``'s Config.Env), by name."""
    return dict(item.split("=", 1) for item in (inspect.get("Config") or {}).get("Env") or [] if "=" in item)


@dataclass
class ContainerFacts:
    """What one container is, read once per session: arch, versions, the env it sets.

    The versions gate nothing (a null one is recorded with why), so their read, started with the
    arch's, is waited for only when the artifact needs them: the first command does not wait for
    a ``python3`` in the container."""

    handle: Executor
    arch: str | None = None
    arch_problem: str | None = None
    container_env: dict[str, str] = field(default_factory=dict)
    pythonpath: str = ""  # the place's own PYTHONPATH: a command's import path goes before it, never replaces it
    reading: Background[tuple[Versions, list[str]]] | None = None  # the versions' read, under way
    _read: tuple[Versions, list[str]] | None = None
    identity: list | None = None  # the container's id and start time when read (facts_cache.py)
    cached: bool = False  # kept from an earlier session of the same container start (facts_cache.py)
    import_probe: str | None = None  # the import probe's folder, once put there this session (import_probe.py)

    def keep_versions(self, versions: Versions, gaps: list[str]) -> None:
        """The versions as read before (an earlier session's read of the same container start)."""
        self._read, self.reading = (versions, gaps), None

    def versions_read(self, wait: bool = True) -> tuple[Versions, list[str]]:
        """(versions, why any is null), read once. ``wait=False``, for a run that ended before its
        command (an interrupt, a block): a read still under way is not waited for, and not kept for
        the session's later targets either."""
        reading = self.reading
        if self._read is None and reading is not None:
            if not wait and not reading.done:
                return Versions(), [f"versions: not read in {self.handle.name}: the run ended before its command"]
            reading.wait(VERSIONS_TIMEOUT_S + 5)  # its own command is bounded by VERSIONS_TIMEOUT_S
            try:  # the artifact is built from this: never lose it to the read
                self._read = (
                    reading.result()
                    if reading.done
                    else (Versions(), [f"versions: not read in {self.handle.name}: the read did not end"])
                )
            except Exception as exc:
                self._read = Versions(), [f"versions: could not be read in {self.handle.name} ({exc})"]
            self.reading = None
        return self._read if self._read is not None else (Versions(), [])


# Variables the container itself sets that change what runs; recorded, never overridden.
CONTAINER_ENV_RECORDED = (
    "AITER_USE_SYSTEM_TRITON",
    "AITER_TRITON_ONLY",
    "GPU_ARCHS",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "FLYDSL_RUNTIME_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "TRITON_PRINT_AUTOTUNING",
    *MULTICAST_OFF,  # the user's own NVLink multicast settings, which the engine then leaves as they are
)


def _timed_versions(handle: Executor) -> tuple[Versions, list[str]]:
    with PROFILE.phase("container versions read"):
        return read_versions(handle)


def read_container_facts(handle: Executor, vendor: str = "rocm", read_arch: bool = True) -> ContainerFacts:
    """``read_arch=False``: the arch is set by the caller, who read it already (the host's, read by the
    session's GPU start: the same GPUs, so not a second ``rocminfo`` or ``nvidia-smi``)."""
    facts = ContainerFacts(handle)
    try:
        if not handle.running:
            return facts
        facts.reading = Background(lambda: _timed_versions(handle), "gpuverify-versions")  # two commands at once
        if read_arch:
            facts.arch, facts.arch_problem = container_arch(handle, vendor)
        env = environment_of(handle.inspect())
        facts.container_env = {k: env[k] for k in CONTAINER_ENV_RECORDED if k in env}
        facts.pythonpath = env.get("PYTHONPATH", "")
    except ContainerError as exc:
        facts.arch_problem = str(exc)
    return facts


def move_out(handle, inside: str, dest: Path, limit: int = 64 << 20) -> tuple[Path | None, str | None]:
    """Copy a file the run wrote inside (a JUnit report) to ``dest`` and remove it there.
    (None, None) when the run wrote none; (None, why) when it could not be fetched."""
    import shlex

    try:
        code, data = handle.capture(
            ["sh", "-c", f"cat {shlex.quote(inside)} && rm -f {shlex.quote(inside)}"], timeout_s=60, limit=limit
        )
    except ContainerError as exc:
        return None, f"{inside} could not be fetched: {exc}"
    if code != 0 or not data:
        return None, None
    from pytest_gpuverify.common.files import RESULT_MODE, write_atomic

    write_atomic(dest, data, mode=RESULT_MODE)
    return dest, None
