"""A run's bundle for the ingest service: one gzipped tar of the artifact, the files it names (raw output,
JUnit reports, kept build outputs) and each one's ``.sig``, under one folder named as the artifact's (its
ticket: ``gpuverify check`` wants the artifact in its ticket's folder). Unpacking trusts nothing in it: only
plain files under that one folder, no path outside it, sizes capped."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path, PurePosixPath

from pytest_gpuverify.engine.signing import signature_of

MAX_BYTES = 64 * 1024 * 1024  # a bundle as sent (gzipped), and all its files unpacked
MAX_FILES = 256
# what the client sends beside the bundle, as headers of its POST
RUN_URL_HEADER = "X-Gpuverify-Run-Url"  # the CI run's URL
REF_HEADER = "X-Gpuverify-Ref"  # the branch the runner's checkout was on: the service has no checkout to ask
PATH_HEADER = "X-Gpuverify-Artifact"  # the artifact's path on the runner, as the store names the run


class BundleError(Exception):
    """The bundle cannot be unpacked; the message says why in one line."""


def bundle_files(artifact: Path) -> list[Path]:
    """The artifact, the files beside it that it names, and their signatures, where they exist."""
    try:
        data = json.loads(artifact.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}  # sent as it is: the service's check names what is wrong with it
    names = [data.get("raw_output"), data.get("junit_xml")] if isinstance(data, dict) else []
    for key, field in (("runs", "junit_xml"), ("builds", "output")):
        items = data.get(key) if isinstance(data, dict) else None
        names += [item.get(field) for item in items or [] if isinstance(item, dict)]
    files = [artifact]
    for name in names:
        # only files beside it, named relative to it: an absolute path is not the bundle's to carry
        if isinstance(name, str) and name and not PurePosixPath(name).is_absolute() and ".." not in Path(name).parts:
            files.append(artifact.parent / name)
    files += [signature_of(f) for f in files]
    return [f for f in dict.fromkeys(files) if f.is_file()]


def make_bundle(artifact: Path) -> bytes:
    """The artifact's bundle: a gzipped tar of :func:`bundle_files` under the artifact's folder's name."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path in bundle_files(artifact):
            name = PurePosixPath(artifact.parent.name, *path.relative_to(artifact.parent).parts)
            tar.add(path, arcname=str(name), recursive=False)
    return out.getvalue()


def unpack(data: bytes, into: Path, max_bytes: int = MAX_BYTES) -> Path:
    """Unpack a bundle into the folder ``into``; the artifact's path there (the one ``bench_*.json`` at the top
    of the bundle's one folder). BundleError on anything else: not a gzipped tar, a link or device, a path
    outside the folder, more than one folder or artifact, over ``max_bytes`` or :data:`MAX_FILES`."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")
        members = tar.getmembers()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"not a gzipped tar ({exc})") from None
    with tar:
        if len(members) > MAX_FILES:
            raise BundleError(f"{len(members)} files, over the {MAX_FILES} a bundle may hold")
        total = 0
        tops: set[str] = set()
        for member in members:
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] in ("", "."):
                raise BundleError(f"{member.name}: a path outside the bundle's folder")
            if member.isdir():
                continue
            if not member.isfile():
                raise BundleError(f"{member.name}: not a plain file (links and devices are refused)")
            if len(path.parts) < 2:
                raise BundleError(f"{member.name}: not in the bundle's folder (the artifact's ticket)")
            tops.add(path.parts[0])
            total += member.size
            if total > max_bytes:
                raise BundleError(f"its files unpack to over {max_bytes} bytes")
        if len(tops) != 1:
            raise BundleError(f"{len(tops)} top folders; a bundle holds one (the artifact's)")
        (top,) = tops
        artifacts = [m.name for m in members if m.isfile() and len(PurePosixPath(m.name).parts) == 2]
        artifacts = [n for n in artifacts if PurePosixPath(n).name.startswith("bench_") and n.endswith(".json")]
        if len(artifacts) != 1:
            raise BundleError(f"{len(artifacts)} artifacts (bench_*.json) in {top}/; a bundle holds one")
        try:
            if hasattr(tarfile, "data_filter"):  # the standard library's own refusal of links and escapes too
                tar.extractall(into, filter="data")
            else:  # a Python before 3.11.4: the checks above are the refusal
                tar.extractall(into)
        except (tarfile.TarError, OSError) as exc:
            raise BundleError(f"cannot be unpacked ({exc})") from None
    return into / artifacts[0]
