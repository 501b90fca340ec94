"""What an agent may name: a ticket by key (its folder under the env file's tickets), a Repos row by name,
and targets that the row's checkout declares or holds. Anything else is refused with the fix; the
server never takes a path or a command from an agent as it is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pytest_gpuverify.config.envfile import EnvFile, RepoRow

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a ticket key or a topic: one path component
_TARGET = re.compile(r"^[A-Za-z0-9_./\[\]:-]+$")


class Refused(Exception):
    """A request the server does not serve; ``fix`` says what to ask instead."""

    def __init__(self, refused: str, fix: str) -> None:
        super().__init__(f"{refused}. Fix: {fix}")
        self.refused, self.fix = refused, fix


@dataclass(frozen=True)
class Places:
    env: EnvFile

    @property
    def tickets(self) -> Path:
        if self.env.resources.tickets is None:
            raise Refused(
                f"{self.env.path} has no tickets row in its Resources table",
                "add `| tickets | /path/to/tickets |` to the env file's Resources table",
            )
        return Path(self.env.resources.tickets).expanduser().resolve()

    def ticket(self, key: str, must_exist: bool = True) -> Path:
        if not _KEY.match(key) or key in (".", ".."):
            raise Refused(f"ticket {key!r} is not a ticket key", "name a key such as ABC-123 (letters, digits, . _ -)")
        folder = self.tickets / key
        if must_exist and not folder.is_dir():
            known = sorted(p.name for p in self.tickets.iterdir() if p.is_dir()) if self.tickets.is_dir() else []
            raise Refused(
                f"ticket {key}: no folder {folder}",
                f"name one of: {', '.join(known[:20])}" if known else "run `verify` for this ticket first",
            )
        return folder

    def artifact(self, key: str, topic: str) -> Path:
        folder = self.ticket(key)
        if not _KEY.match(topic):
            raise Refused(
                f"topic {topic!r} is not a topic", "name a topic as the artifact's file says: bench_<topic>.json"
            )
        path = folder / f"bench_{topic}.json"
        if not path.is_file():
            known = sorted(p.name[len("bench_") : -len(".json")] for p in folder.glob("bench_*.json"))
            raise Refused(f"ticket {key} has no artifact {path.name}", f"name one of the topics: {', '.join(known)}")
        return path

    def repo(self, name: str | None) -> tuple[RepoRow, Path]:
        rows = [r for r in self.env.repos if r.path is not None]
        names = ", ".join(r.repo for r in rows) or "none"
        if name is None:
            if len(rows) != 1:
                raise Refused(
                    f"{self.env.path} has {len(rows)} Repos rows with a path", f"name the repo: one of {names}"
                )
            row = rows[0]
        else:
            found = [r for r in rows if r.repo == name] or [r for r in rows if r.repo.casefold() == name.casefold()]
            if not found:
                raise Refused(f"repo {name!r} is not a Repos row of {self.env.path}", f"name one of: {names}")
            row = found[0]
        assert row.path is not None
        return row, Path(row.path).expanduser().resolve()


def declared_names(checkout: Path) -> list[str]:
    """The targets the checkout's declaration file names (none when it has none)."""
    from pytest_gpuverify.config.declarations import find_declarations, load_declarations

    found = find_declarations(checkout, checkout)
    return load_declarations(found).names if found is not None else []


def split_targets(checkout: Path, targets: list[str]) -> tuple[list[str], list[str]]:
    """(declared names, test paths or node ids) of ``targets``; anything else is refused: a name not
    declared, a path outside the checkout or not in it, an option, a command."""
    if not targets:
        raise Refused("no targets named", "name declared targets or test files of the repo's checkout")
    declared = declared_names(checkout)
    names: list[str] = []
    paths: list[str] = []
    for target in targets:
        if target in declared:
            names.append(target)
            continue
        if not _TARGET.match(target) or target.startswith("-"):
            raise Refused(
                f"target {target!r} is neither a declared target nor a test path of {checkout}",
                "name a declared target or a test file (or node id) relative to the checkout; commands and "
                "options are never run",
            )
        file = target.split("::", 1)[0]
        path = (checkout / file).resolve()
        if path != checkout and checkout not in path.parents:
            raise Refused(f"target {target!r} is outside the repo checkout {checkout}", "name a path inside it")
        if not path.exists():
            hint = f"; the declared targets are {', '.join(declared)}" if declared else ""
            raise Refused(f"target {target!r}: no {path} in the checkout", f"name a test file that exists{hint}")
        paths.append(target)
    return names, paths
