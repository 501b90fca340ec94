"""The kernels' identity: each kernel the trace run dispatched (name, grid), with the sha256 of the code
object it ran. The tracer names a file-backed code object by URI (``file:///x.so#offset=N&size=M``: that
byte range is hashed); a JIT's in-memory load is found by name in the JIT caches (Triton's cache folders
hold ``<name>.json`` metadata beside ``<name>.cubin``/``<name>.hsaco``; aiter's JIT dir its built
modules). :data:`LOOKUP_SCRIPT` runs where the command ran (a container or the host), standard library only."""

from __future__ import annotations

import json
import statistics

from pytest_gpuverify.records.artifact import KernelRecord
from pytest_gpuverify.trace.corroborate import Corroboration, row_label
from pytest_gpuverify.trace.launches import Launch

LOOKUP_SCRIPT = r"""
import hashlib, json, os, sys
from urllib.parse import parse_qs, unquote, urlparse

def sha(data):
    return hashlib.sha256(data).hexdigest()

roots, uris = json.loads(sys.argv[1]), json.loads(sys.argv[2])
by_name, by_uri = {}, {}
for root in roots:
    for folder, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".json") or f.startswith("__grp__"):
                continue
            try:
                with open(os.path.join(folder, f)) as fh:
                    meta = json.load(fh)
            except (OSError, ValueError):
                continue
            name = meta.get("name") if isinstance(meta, dict) else None
            for ext in (".hsaco", ".cubin"):
                path = os.path.join(folder, f[:-5] + ext)
                if name and os.path.isfile(path):
                    with open(path, "rb") as fh:
                        by_name.setdefault(name, []).append([path, sha(fh.read())])
for uri in uris:
    u = urlparse(uri)
    if u.scheme != "file":
        continue
    q = parse_qs(u.fragment)
    try:
        with open(unquote(u.path), "rb") as fh:
            fh.seek(int(q.get("offset", ["0"])[0], 0))
            data = fh.read(int(q["size"][0], 0)) if "size" in q else fh.read()
        by_uri[uri] = [unquote(u.path), sha(data)]
    except (OSError, ValueError, KeyError):
        pass
print(json.dumps({"by_name": by_name, "by_uri": by_uri}))
"""


def lookup_argv(python: str, roots: list[str], launches: list[Launch]) -> list[str]:
    uris = sorted({la.code_object for la in launches if la.code_object})
    return [python, "-c", LOOKUP_SCRIPT, json.dumps(roots), json.dumps(uris)]


def parse_lookup(output: bytes) -> tuple[dict[str, list[list[str]]], dict[str, list[str]]]:
    """(by kernel name: [[path, sha256], ...], by URI: [path, sha256]) from the script's last line."""
    try:
        found = json.loads(output.decode("utf-8", "replace").strip().splitlines()[-1])
        return dict(found.get("by_name", {})), dict(found.get("by_uri", {}))
    except (ValueError, IndexError, AttributeError):
        return {}, {}


def base_name(name: str) -> str:
    """The name a JIT's metadata uses: ROCm's kernel descriptor suffix ``.kd`` dropped."""
    return name[: -len(".kd")] if name.endswith(".kd") else name


def kernel_records(
    launches: list[Launch],
    corroboration: Corroboration | None,
    by_name: dict[str, list[list[str]]],
    by_uri: dict[str, list[str]],
) -> list[KernelRecord]:
    """One record per (kernel, grid), in the order they first ran, with the rows their loops timed."""
    groups: dict[tuple[str, tuple[int, ...]], list[Launch]] = {}
    for launch in sorted(launches, key=lambda la: la.start_ns):
        groups.setdefault((launch.name, launch.grid), []).append(launch)
    rows: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    for row, loop in corroboration.pairs if corroboration is not None else []:
        rows.setdefault((loop.name, loop.grid), []).append(row_label(row))
    records = []
    for (name, grid), group in groups.items():
        found = [by_uri[la.code_object] for la in group if la.code_object in by_uri]
        found = found or by_name.get(base_name(name), [])
        pairs = sorted({(path, digest) for path, digest in found}, key=lambda p: p[1])
        records.append(
            KernelRecord(
                name=name,
                grid=list(grid),
                launches=len(group),
                median_ns=round(statistics.median(la.duration_ns for la in group)),
                code_objects=sorted({digest for _, digest in pairs}),
                code_object_paths=[path for path, _ in pairs],
                rows=rows.get((name, grid), []),
            )
        )
    return records
