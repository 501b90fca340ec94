"""``--gpu-changed-since REF``: which targets a change touches. A target's files are its own file (a
folder for a pytest target), the files its command and arguments name that lie in its checkout, and the
files its declaration's ``paths`` globs match; the
change is ``git diff --name-only REF...HEAD`` of that checkout (what HEAD changed since it forked from
REF). A target whose files are not known, or whose checkout git cannot diff, is kept: skipping it
could hide a regression."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.config.targets import Target, glob_regex
from pytest_gpuverify.place.gitstate import git_toplevel, run_git


@dataclass
class Selection:
    kept: list[str] = field(default_factory=list)  # target names
    skipped: list[str] = field(default_factory=list)  # none of their files changed
    unknown: list[str] = field(default_factory=list)  # kept: no file of theirs is known
    undiffed: dict[str, list[str]] = field(default_factory=dict)  # kept: why git could not diff -> names

    def line(self, ref: str) -> str:
        """One line: what runs, what is skipped and why."""
        total = len(self.kept) + len(self.skipped)
        out = f"--gpu-changed-since {ref}: {len(self.kept)} of {total} target(s) run"
        if self.skipped:
            out += f"; skipped, none of their files changed: {', '.join(self.skipped)}"
        if self.unknown:
            out += f"; kept, no file of theirs known: {', '.join(self.unknown)}"
        for why, names in self.undiffed.items():
            out += f"; kept, {why}: {', '.join(names)}"
        return out


def changed_files(top: Path, ref: str) -> set[Path] | str:
    """The files HEAD changed since it forked from ``ref`` (absolute), or why git could not say."""
    res = run_git(top, "diff", "--name-only", "-z", f"{ref}...HEAD", "--")
    if res is None:
        return f"git could not run in {top}"
    if res.returncode != 0:
        first = (res.stderr.strip().splitlines() or ["no message"])[0]
        return f"git diff {ref}...HEAD failed in {top} ({first}); fetch {ref} (e.g. fetch-depth: 0)"
    return {top / name for name in res.stdout.split("\0") if name}


def target_files(target: Target, top: Path) -> list[Path]:
    """The target's own file and the files under ``top`` its command and arguments name."""
    files = [target.path.resolve()] if target.path is not None else []
    base = target.path.parent if target.path is not None and target.path.is_file() else target.location
    folders = [f for f in (base / target.workdir if base and target.workdir else None, base, top) if f is not None]
    for word in (*(target.command or ()), *target.args):
        for part in word.split("=", 1)[-1:]:  # --config=cfg.yaml names cfg.yaml
            if not part or part.startswith("-") or "/" not in part and "." not in part:
                continue
            for folder in folders:
                path = (folder / part).resolve() if not Path(part).is_absolute() else Path(part).resolve()
                if path.exists() and path.is_relative_to(top):
                    files.append(path)
                    break
    return list(dict.fromkeys(files))


def touched(files: list[Path], changed: set[Path], globs: tuple[str, ...] = ()) -> bool:
    """A changed file is one of ``files``, lies under one of them (a folder), or matches one of ``globs``
    (absolute: the declaration's directory joined)."""
    if any(c == f or c.is_relative_to(f) for c in changed for f in files):
        return True
    return any(glob_regex(g).fullmatch(c.as_posix()) for c in changed for g in globs)


def select_changed(targets: list[Target], ref: str) -> Selection:
    out = Selection()
    diffs: dict[Path, set[Path] | str] = {}
    for target in targets:
        top = git_toplevel(target.location) if target.location is not None else None
        if top is None:
            out.unknown.append(target.name)
            out.kept.append(target.name)
            continue
        top = top.resolve()
        if top not in diffs:
            diffs[top] = changed_files(top, ref)
        changed = diffs[top]
        if isinstance(changed, str):
            out.undiffed.setdefault(changed, []).append(target.name)
            out.kept.append(target.name)
            continue
        files = target_files(target, top)
        if not files and not target.paths:
            out.unknown.append(target.name)
            out.kept.append(target.name)
        elif touched(files, {c.resolve() if c.exists() else c for c in changed}, target.paths):
            out.kept.append(target.name)
        else:
            out.skipped.append(target.name)
    return out
