"""``gpuverify merge DIR... -o DIR``: the ticket folders of several CI shards or hosts, as one.

Each artifact (``bench_*.json``) is checked with ``gpuverify check``'s function before it is taken, then
copied with the files it names (raw log, inner JUnit report) and their ``.sig`` files, and checked again
where it lands: the output is one ticket's folder, named by the ticket (an artifact's ``key``), as a
source's folder need not be (a CI shard's download, the controller's staging). One topic from two
different runs is refused, unless ``keep_all``: then the later one is renamed
``bench_<topic>.from-<source>.json`` (still named after its topic); nothing is ever overwritten.
An identical file seen twice (the same run uploaded twice) is taken once. Every artifact and every
file's place is checked before anything is copied: one refusal and nothing is copied, so a merge
never leaves a half-filled folder.

Artifacts of a split run (``--gpu-shard``) say which shard they belong to: merge names every shard
that is missing, ran twice or came incomplete (reporting/shard_check.py), over the sources and what
the output folder already holds, and exits 1 then.
"""

from __future__ import annotations

import filecmp
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_gpuverify.verify.check import check_artifact
from pytest_gpuverify.verify.schemas import SchemaError, load_checked


def _problems(path: Path, gathered: bool) -> list[str]:
    """``gpuverify check``'s differences; ``gathered``: a source's copy, whose folder need not be its ticket's."""
    try:
        art = load_checked(path)
    except SchemaError as exc:
        return [f"schema: {p}" for p in exc.problems]
    except (OSError, ValueError) as exc:
        return [f"unreadable: {exc}"]
    return check_artifact(art, path, gathered)


def _companions(path: Path) -> list[Path]:
    """The files an artifact names, beside it, and every one's signature."""
    art = load_checked(path)
    names = [n for n in (art.raw_output, art.junit_xml, *(p.path for p in art.profiles)) if n]
    files = [path.parent / Path(n).name for n in names] + [path]
    return [f for base in files for f in (base, base.with_name(base.name + ".sig")) if f.exists()]


def _label(source: Path, index: int) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", source.name).strip("-") or f"source{index}"


def merge(
    sources: list[Path],
    out: Path,
    *,
    keep_all: bool = False,
    say: Callable[[str], None] = print,
    taken: dict[Path, Path] | None = None,
) -> int:
    """0 when every artifact was taken and passes check where it landed; 1 otherwise (nothing is
    copied when any artifact is refused). ``taken``: filled with each artifact taken -> where it landed."""
    copies, refused = _plan(sources, out, keep_all, say, _superseded(sources, out))
    shard_lines, shards_whole = shards_arrived(sources, out)
    for line in shard_lines:
        say(line)
    if refused:
        say(f"nothing copied into {out}: {refused} refusal(s) above; fix them (or pass --keep-all) and merge again")
        return 1
    from pytest_gpuverify.common.files import make_dirs

    make_dirs(out)  # a ticket's folder: group-shared where its parent is, whatever the umask
    failed = 0
    for path, name, files in copies:
        for src, dest in files:
            if not dest.exists():  # an identical file already there is taken once
                shutil.copy2(src, dest)
        landed = _problems(out / name, gathered=False)  # where it lands is its ticket's folder
        if landed:
            failed += 1
            say(f"MISMATCH {out / name}: {landed[0]}")
        else:
            say(f"OK {out / name} (from {path})")
            if taken is not None:
                taken[path] = out / name
    return 1 if failed or not shards_whole else 0


def shards_arrived(sources: list[Path], out: Path) -> tuple[list[str], bool]:
    """The shard lines over every readable artifact of the sources and of ``out`` (shard_check.py)."""
    from pytest_gpuverify.reporting.shard_check import shard_lines

    records = _shard_records(sources, out)
    return shard_lines(records) if records else ([], True)


def _superseded(sources: list[Path], out: Path) -> dict[Path, str]:
    """The sources' artifacts of a shard that a later CI attempt ran again -> why (shard_check.py)."""
    from pytest_gpuverify.reporting.shard_check import superseded

    return superseded(_shard_records(sources, out))


def _shard_records(sources: list[Path], out: Path) -> list:
    records = []
    for folder in [*sources, out]:
        for path in sorted(folder.glob("bench_*.json")):
            try:
                art = load_checked(path)
            except (SchemaError, OSError, ValueError):
                continue  # refused above, with its reason
            if art.shard is not None:
                records.append((art.shard, path))
    return records


def _plan(
    sources: list[Path], out: Path, keep_all: bool, say: Callable[[str], None], old: dict[Path, str]
) -> tuple[list[tuple[Path, str, list[tuple[Path, Path]]]], int]:
    """(per artifact taken: its path, its name in ``out``, the (source, destination) files to copy;
    how many were refused). ``old``: artifacts a later CI attempt of their shard replaced, set aside
    (one in ``out`` itself is refused: merge never overwrites). Reads everything, writes nothing."""
    taken: dict[str, Path] = {p.name: p for p in out.glob("bench_*.json")}
    planned: dict[Path, Path] = {}  # destination -> source, for the files of every artifact taken
    copies = []
    refused = 0
    for index, source in enumerate(sources):
        artifacts = sorted(source.glob("bench_*.json"))
        if not artifacts:
            say(f"{source}: no artifacts (bench_*.json)")
        for path in artifacts:
            if path in old:
                say(f"SUPERSEDED {path}: {old[path]}; not taken")
                continue
            problems = _problems(path, gathered=True)
            key = load_checked(path).key if not problems else None
            if key is not None and key != out.name:
                problems = [f"its ticket is {key}: it lands only in a folder named {key} (-o .../{key})"]
            if problems:
                refused += 1
                say(f"REFUSED {path}: does not pass check: {problems[0]}")
                continue
            name = path.name
            if name in taken and taken[name] in old:
                refused += 1
                say(
                    f"REFUSED {path}: {taken[name]} is {old[taken[name]]}, and merge overwrites nothing; merge the "
                    "attempts into a new folder"
                )
                continue
            if name in taken and not filecmp.cmp(path, taken[name], shallow=False):
                if not keep_all:
                    refused += 1
                    say(f"REFUSED {path}: topic already taken from another run ({taken[name]}); --keep-all keeps both")
                    continue
                name = f"{path.name[: -len('.json')]}.from-{_label(source, index)}.json"
                if (out / name).exists() or out / name in planned:
                    name = f"{path.name[: -len('.json')]}.from-{_label(source, index)}-{index}.json"
            files = [
                (f, out / (name + ".sig" if f.name == path.name + ".sig" else name if f == path else f.name))
                for f in _companions(path)
            ]
            clash = next(
                (
                    f"{dest} exists with other content than {src}; nothing is overwritten"
                    for src, dest in files
                    if _differs(src, planned.get(dest, dest))
                ),
                None,
            )
            if clash:
                refused += 1
                say(f"REFUSED {path}: {clash}")
                continue
            planned.update({dest: src for src, dest in files})
            taken.setdefault(path.name, path)
            copies.append((path, name, files))
    return copies, refused


def _differs(src: Path, there: Path) -> bool:
    """``there`` (a file in the folder, or one planned to land there) holds other content than ``src``."""
    return there.exists() and not filecmp.cmp(src, there, shallow=False)
