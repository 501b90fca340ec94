"""The run's own record of its imports: which file each package under test was imported from, as the
command's Python processes really imported it.

A folder holding one ``sitecustomize.py`` goes last on the command's ``PYTHONPATH``; Python's ``site``
imports it at start-up, in every Python process of the command (an inner pytest, a script, their children:
they inherit the variable). It takes its folder off ``sys.path`` at once, imports the ``sitecustomize`` it
shadows (if any) as Python would have, and registers an ``atexit`` recorder: at exit, each package under
test found in ``sys.modules`` is written with its ``__file__`` to ``<records>/<pid>.json``. It prints
nothing, imports nothing of the command's, and costs a file read at start and a small write at exit.

A process started with ``-I``, ``-E`` or ``-S``, or one that ends by a signal or ``os._exit``, records
nothing: then the run's record says "not recorded", and the prediction (import_rules.py) stands.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

PROBE_VAR = "GPUVERIFY_IMPORT_PROBE"  # the folder each process writes its record into
NAMES_VAR = "GPUVERIFY_IMPORT_NAMES"  # the packages under test, comma-separated
MAX_RECORDS = 2000  # processes read back; a command that starts more is said to have
MAX_RECORDS_BYTES = 4 << 20

PROBE_SOURCE = r'''"""gpuverify's import probe (pytest-gpuverify): records where the packages under test were imported from."""


def _gpuverify_import_probe():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # noqa: F401  (the one this shadows, as site would have imported it)
    except ImportError as exc:
        if getattr(exc, "name", "sitecustomize") != "sitecustomize":
            raise
        # none: as without the probe, ``import sitecustomize`` fails with ModuleNotFoundError from here on
        # (the import machinery takes the entry back as this import's result, which site never reads)
        sys.modules["sitecustomize"] = None
    folder = os.environ.get("GPUVERIFY_IMPORT_PROBE", "")
    names = [n for n in os.environ.get("GPUVERIFY_IMPORT_NAMES", "").split(",") if n]
    if not folder or not names or sys.version_info < (3, 3):  # a Python 2 command: left as it is
        return

    def record():  # a forked child that exits normally records too, under its own pid
        found = {}
        for name in names:
            module = sys.modules.get(name)
            if module is None:
                continue
            origin = getattr(module, "__file__", None)
            if not origin:
                origin = next(iter(getattr(module, "__path__", None) or []), None)
            found[name] = origin if isinstance(origin, str) else None
        try:
            import json
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "%d.json" % os.getpid())
            with open(path + ".tmp", "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"pid": os.getpid(), "argv0": (sys.argv or [""])[0], "imported": found}) + "\n")
            os.replace(path + ".tmp", path)
        except Exception:
            pass  # the command's own exit is never changed by the record

    import atexit
    atexit.register(record)


_gpuverify_import_probe()
del _gpuverify_import_probe
'''

PROBE_DIGEST = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()[:12]


def probe_folder(scratch: str) -> str:
    """Where the probe lives in a place: under its scratch folder, named by the probe's content (a stale
    copy of another version is never taken for this one)."""
    return f"{scratch.rstrip('/')}/import-probe-{PROBE_DIGEST}"


def records_folder(scratch: str, run_id: str) -> str:
    return f"{scratch.rstrip('/')}/imports/{run_id}"


def install_command(folder: str) -> list[str]:
    """One ``sh`` that writes the probe into ``folder`` (whole, or not at all)."""
    script = (
        'mkdir -p "$0" && [ -s "$0/sitecustomize.py" ] || { printf %s "$1" > "$0/sitecustomize.py.$$" && '
        'mv -f "$0/sitecustomize.py.$$" "$0/sitecustomize.py"; }'
    )
    return ["sh", "-c", script, folder, PROBE_SOURCE]


def read_back_command(folder: str) -> list[str]:
    """One ``sh`` that prints every record of the run and removes them."""
    return ["sh", "-c", 'for f in "$0"/*.json; do [ -f "$f" ] && cat "$f"; done; rm -rf "$0"', folder]


def probe_env(probe: str, records: str, names: Sequence[str], pythonpath: str) -> dict[str, str]:
    """The variables that load the probe: the probe's folder last on ``PYTHONPATH`` (nothing of the
    command's can be found there, and nothing of the command's is shadowed by it but ``sitecustomize``,
    which it imports in turn), where to record, and what."""
    return {
        "PYTHONPATH": f"{pythonpath}:{probe}" if pythonpath else probe,
        PROBE_VAR: records,
        NAMES_VAR: ",".join(names),
    }


def is_probe_folder(path: str) -> bool:
    return path.rstrip("/").rsplit("/", 1)[-1].startswith("import-probe-")


@dataclass
class Observed:
    """What the command's processes recorded: per package, every file it was imported from (first seen
    first), and how many processes recorded at all."""

    processes: int = 0
    origins: dict[str, list[str]] = field(default_factory=dict)
    problem: str | None = None  # why nothing could be read back

    @property
    def recorded(self) -> bool:
        return self.processes > 0


def parse_records(text: str) -> Observed:
    observed = Observed()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        imported = record.get("imported") if isinstance(record, dict) else None
        if not isinstance(imported, dict):
            continue
        observed.processes += 1
        if observed.processes > MAX_RECORDS:
            break
        for name, origin in imported.items():
            if isinstance(name, str) and isinstance(origin, str):
                seen = observed.origins.setdefault(name, [])
                if origin not in seen:
                    seen.append(origin)
    return observed


def read_records(handle, folder: str) -> Observed:
    """The run's records in ``folder`` of the place ``handle``, read and removed (one small command)."""
    try:
        code, out = handle.capture(read_back_command(folder), timeout_s=60, limit=MAX_RECORDS_BYTES)
    except Exception as exc:  # an executor's error: the records are lost, the prediction stands
        return Observed(problem=f"the run's import records in {folder} could not be read ({exc})")
    if code is None:
        return Observed(problem=f"reading the run's import records in {folder} timed out")
    return parse_records(out.decode("utf-8", errors="replace"))


def install(handle, folder: str) -> str | None:
    """Put the probe into ``folder`` in the place; the reason when it could not be."""
    try:
        code, out = handle.capture(install_command(folder), timeout_s=60)
    except Exception as exc:
        return f"the import probe could not be put into {folder} ({exc})"
    if code != 0:
        return f"the import probe could not be put into {folder} (exit {code}: {shlex.quote(out.decode(errors='replace')[-200:])})"
    return None
