"""``gpuverify merge DIR... -o DIR``: the ticket folders of several CI shards or hosts, as one.

Each artifact (``bench_*.json``) is checked with ``gpuverify check``'s function before it is taken, then
copied with the files it names (raw log, inner JUnit report) and their ``.sig`` files, and checked again
where it lands: the output is one ticket's folder, named by the ticket (an artifact's ``key``), as a
source's folder need not be (a CI shard's download, the controller's staging). One topic from two
different runs is refused, unless ``keep_all``: then the later one is renamed
``bench_<topic>.from-<source>.json`` (still named after its topic); nothing is ever overwritten.
An identical file seen twice (the same run uploaded twice) is taken once.
"""

from __future__ import annotations

import filecmp
import re
import shutil
from pathlib import Path
from typing import Callable

from pytest_gpuverify.cli.check import check_artifact
from pytest_gpuverify.engine.schemas import SchemaError, load_checked


class MergeError(Exception):
    pass


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
    names = [n for n in (art.raw_output, art.junit_xml) if n]
    files = [path.parent / Path(n).name for n in names] + [path]
    return [f for base in files for f in (base, base.with_name(base.name + ".sig")) if f.exists()]


def _copy(src: Path, dest: Path) -> None:
    if dest.exists():
        if filecmp.cmp(src, dest, shallow=False):
            return
        raise MergeError(f"{dest} exists with other content than {src}; nothing is overwritten")
    shutil.copy2(src, dest)


def _label(source: Path, index: int) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", source.name).strip("-") or f"source{index}"


def merge(sources: list[Path], out: Path, *, keep_all: bool = False,
          say: Callable[[str], None] = print) -> int:
    """0 when every artifact was taken and passes check where it landed; 1 otherwise."""
    out.mkdir(parents=True, exist_ok=True)
    taken: dict[str, Path] = {p.name: p for p in out.glob("bench_*.json")}
    failed = 0
    for index, source in enumerate(sources):
        artifacts = sorted(source.glob("bench_*.json"))
        if not artifacts:
            say(f"{source}: no artifacts (bench_*.json)")
        for path in artifacts:
            problems = _problems(path, gathered=True)
            if problems:
                failed += 1
                say(f"REFUSED {path}: does not pass check: {problems[0]}")
                continue
            name = path.name
            if name in taken and not filecmp.cmp(path, taken[name], shallow=False):
                if not keep_all:
                    failed += 1
                    say(f"REFUSED {path}: topic already taken from another run ({taken[name]}); --keep-all keeps both")
                    continue
                name = f"{path.name[:-len('.json')]}.from-{_label(source, index)}.json"
                if (out / name).exists():
                    name = f"{path.name[:-len('.json')]}.from-{_label(source, index)}-{index}.json"
            try:
                for f in _companions(path):
                    target = out / (name + ".sig" if f.name == path.name + ".sig" else name if f == path else f.name)
                    _copy(f, target)
            except MergeError as exc:
                failed += 1
                say(f"REFUSED {path}: {exc}")
                continue
            taken.setdefault(path.name, path)
            landed = _problems(out / name, gathered=False)  # where it lands is its ticket's folder
            if landed:
                failed += 1
                say(f"MISMATCH {out / name}: {landed[0]}")
            else:
                say(f"OK {out / name} (from {path})")
    return 1 if failed else 0
