"""The autotuner's choices as the run's Triton cache holds them, read once the run's command ended (and before
a cold cache is removed): best effort and bounded, for the runs whose printout shows no choice.

Triton writes ``<TRITON_CACHE_DIR>/<hash>/<function>.autotune.json`` (``{"key": [...], "configs_timings":
[[config, timings], ...]}``; the choice is the config of the least timing) when a kernel is tuned with
``cache_results=True`` or ``TRITON_CACHE_AUTOTUNING=1``, and reads it instead of tuning again, printing
nothing. A file written during the run is a choice of that run; one older than it may have been used
without a word, which is said (``held_before``). A file an earlier read of the same cache already took
(same path, same modification time) is an older one too, whatever the clocks say: a warm cache's file
written by the warm-up a moment before the next run started is that warm-up's choice, not the run's. The
compiled kernels' own ``*.json`` hold every configuration the tuning compiled, not the one it chose, so
they are not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_gpuverify.records.artifact import AutotuneChoice

READ_TIMEOUT_S = 20.0  # the read's own limit; its walk stops itself at WALK_S
WALK_S = 10.0
FILE_CAP = 500  # choice files read per run
_MARK = "gpuverify-autotune-cache "

# Run where the cache is (in the container, or on the host) with its python3: standard library only.
_SCRIPT = r"""
import json, os, sys, time
root, since, cap, walk_s = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
known = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
out = {"new": [], "old": 0, "cut": False, "exists": os.path.isdir(root)}
deadline = time.monotonic() + walk_s
for folder, _, files in os.walk(root):
    if time.monotonic() > deadline:
        out["cut"] = True
        break
    for name in files:
        if not name.endswith(".autotune.json"):
            continue
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, root)
        try:
            mtime = os.stat(path).st_mtime
            if mtime < since or known.get(rel) == mtime:
                out["old"] += 1
                continue
            if len(out["new"]) >= cap:
                out["cut"] = True
                continue
            with open(path) as fh:
                out["new"].append({"file": rel, "mtime": mtime, "data": json.load(fh)})
        except (OSError, ValueError):
            continue
print("gpuverify-autotune-cache " + json.dumps(out))
"""


@dataclass
class CacheRead:
    """What one run's Triton cache said: its choices written during the run, how many older ones it held
    (``held_before``), why it could not be read (``problem``), and the files it took with their
    modification times (``taken``: the next read of the same cache holds them as older)."""

    choices: list[AutotuneChoice] = field(default_factory=list)
    held_before: int = 0
    problem: str | None = None
    taken: dict[str, float] = field(default_factory=dict)


def read_cached_choices(
    handle, triton_dir: str | None, since_epoch: float, known: dict[str, float] | None = None
) -> CacheRead:
    """The choices in ``triton_dir`` (a path where ``handle`` runs) written at or after ``since_epoch``
    (less a second of slack for the clocks) and not among ``known`` (``taken`` by earlier reads of it)."""
    if not triton_dir:
        return CacheRead(problem="the run had no TRITON_CACHE_DIR of the engine's")
    since = since_epoch - 1.0
    argv = ["python3", "-c", _SCRIPT, triton_dir, f"{since:.3f}", str(FILE_CAP), str(WALK_S)]
    near = {rel: mtime for rel, mtime in (known or {}).items() if mtime >= since}  # the older ones fall out anyway
    if near:
        argv.append(json.dumps(near))
    try:
        code, data = handle.capture(argv, timeout_s=READ_TIMEOUT_S, limit=16 << 20)
    except Exception as exc:  # noqa: BLE001  # best effort: the artifact says the choice is unknown, and why
        return CacheRead(problem=f"the Triton cache {triton_dir} could not be read ({type(exc).__name__}: {exc})")
    text = data.decode(errors="replace")
    line = next((ln for ln in reversed(text.splitlines()) if ln.startswith(_MARK)), None)
    if code is None or line is None:
        why = "did not finish" if code is None else f"exited {code}: {text.strip()[-200:]}"
        return CacheRead(problem=f"the read of the Triton cache {triton_dir} {why}")
    try:
        found = json.loads(line[len(_MARK) :])
    except ValueError:
        return CacheRead(problem=f"the read of the Triton cache {triton_dir} printed no JSON")
    read = CacheRead(held_before=int(found.get("old", 0)))
    for entry in found.get("new", []):
        if isinstance(entry.get("mtime"), (int, float)):
            read.taken[str(entry.get("file", ""))] = float(entry["mtime"])
        choice = choice_of(entry.get("file", ""), entry.get("data"))
        if choice is not None:
            read.choices.append(choice)
    if found.get("cut"):
        read.problem = f"the Triton cache {triton_dir} was read in part (over {FILE_CAP} files or {WALK_S:g} s)"
    return read


def choice_of(rel_file: str, data: Any) -> AutotuneChoice | None:
    """The choice one ``<function>.autotune.json`` holds: its config of the least timing; None if unreadable."""
    if not isinstance(data, dict) or not isinstance(data.get("configs_timings"), list):
        return None
    best: tuple[Any, dict] | None = None
    for pair in data["configs_timings"]:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict)):
            continue
        timing = pair[1] if isinstance(pair[1], list) else [pair[1]]
        if best is None or timing < best[0]:
            best = (timing, pair[0])
    if best is None:
        return None
    raw = best[1]
    config = {k: _scalar(v) for k, v in (raw.get("kwargs") or {}).items()}
    config.update({k: _scalar(v) for k, v in raw.items() if k not in ("kwargs", "pre_hook")})
    name = rel_file.rsplit("/", 1)[-1].removesuffix(".autotune.json")
    key = data.get("key")
    return AutotuneChoice(
        function=name,
        config=config,
        source="cache",
        file=rel_file,
        key="(" + ", ".join(map(str, key)) + ")" if isinstance(key, list) else None,
    )


def _scalar(value: Any):
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
