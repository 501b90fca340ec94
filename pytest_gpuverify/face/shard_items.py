"""pytest wiring of ``--gpu-shard``: keep this shard's GPU targets, deselect the others.

Only GPU targets are split (config/shards.py decides which goes where); other tests of the session run
in every shard. Every process that collects (a session, each xdist worker) computes the same split.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.config.shards import (
    load_durations,
    new_session_id,
    parse_spec,
    plan_digest,
    run_attempt,
    run_id,
    split,
)
from pytest_gpuverify.face.collectors import GpuTargetItem
from pytest_gpuverify.records.scheduling import ShardRecord

if TYPE_CHECKING:
    from pytest_gpuverify.engine.session import VerifySession


class ShardSetting:
    """The shard options, read and checked once (a bad value stops the run before any GPU is touched);
    registered with the role of a process that runs targets, whose engine records the shard."""

    def __init__(self, config: pytest.Config) -> None:
        spec = config.getoption("gpu_shard")
        self.index, self.count, self.source = parse_spec(spec, os.environ)
        self.run, self.run_from = run_id(config.getoption("gpu_shard_run"), os.environ)
        self.attempt = run_attempt(os.environ)
        durations = config.getoption("gpu_durations")
        self.durations_path = Path(durations).expanduser() if durations else None
        # a file named before its first run wrote it (a recipe's first run, a cache not yet made) does
        # not stop the shards: every target counts the same until it exists. A bad file still does.
        self.durations_missing = self.durations_path is not None and not self.durations_path.exists()
        if self.durations_missing:
            self.durations_path = None
        self.durations = load_durations(self.durations_path) if self.durations_path else {}
        self.durations_named = durations
        self.engine: VerifySession | None = None
        self.empty = False  # this shard got no target of the session's (fewer targets than shards)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """An empty shard ran what it was given, nothing: not pytest's "no tests collected" (exit 5),
        which would fail a CI job or an array task that did its part."""
        if self.empty and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK

    @pytest.hookimpl(trylast=True)  # after every other plugin's selection
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        record = self.select(config, items)
        if self.engine is not None:
            self.engine.shard = record

    def select(self, config: pytest.Config, items: list) -> ShardRecord | None:
        """Deselect the GPU targets of other shards (in place); the record every artifact carries."""
        targets = [i for i in items if isinstance(i, GpuTargetItem)]
        ids = [shard_id(i) for i in targets]  # not the node id: it moves with the rootdir
        seconds = {shard_id(i): self.durations[i.target.topic] for i in targets if i.target.topic in self.durations}
        shards = split(ids, self.count, seconds)
        sizes = [shards.count(s) for s in range(self.count)]
        self.empty = bool(targets) and not sizes[self.index]
        others = {id(item) for item, shard in zip(targets, shards) if shard != self.index}
        if others:
            config.hook.pytest_deselected(items=[i for i in items if id(i) in others])
            items[:] = [i for i in items if id(i) not in others]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(config, "workerinput"):
            if self.empty:
                reporter.write_line(
                    f"gpuverify: shard {self.index}/{self.count} has no targets: "
                    f"{len(targets)} targets over {self.count} shards ({self.source})"
                )
            else:
                reporter.write_line(
                    f"gpuverify: shard {self.index}/{self.count} ({self.source}): "
                    f"{sizes[self.index]} of {len(targets)} GPU targets"
                    + (f", balanced by {self.durations_path}" if self.durations_path else "")
                )
            if self.durations_missing:
                reporter.write_line(
                    f"gpuverify: --gpu-durations {self.durations_named}: no such file yet, so every "
                    "target counts the same. Fix: write it after a run with `gpuverify durations "
                    f"TICKET_DIR... -o {self.durations_named}`",
                    yellow=True,
                )
        return ShardRecord(
            index=self.index,
            count=self.count,
            read_from=self.source,
            run=self.run,
            run_from=self.run_from,
            attempt=self.attempt,
            plan=plan_digest(ids, self.count),
            sizes=sizes,
            session=getattr(config, "workerinput", {}).get("testrunuid") or new_session_id(),
            durations=str(self.durations_path) if self.durations_path else None,
        )


def shard_id(item) -> str:
    """The name a GPU target is split and digested by: its file relative to its git checkout's top,
    and its name there (``op_tests/test_x.py::x``). pytest's node id is relative to the rootdir, which
    moves with the paths on the command line (a path-valued option's value, a checkout reached through
    another folder); two shards given different paths would then split and digest differently."""
    path = Path(str(getattr(item, "path", "") or ""))
    top = _checkout_top(path.parent) if path.is_absolute() else None
    if top is None:
        return item.nodeid
    _, sep, name = item.nodeid.partition("::")
    return path.relative_to(top).as_posix() + sep + name


@functools.lru_cache(maxsize=256)
def _checkout_top(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a worktree's file)."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


SHARD_KEY = pytest.StashKey[ShardSetting]()  # --gpu-shard, read once in choose_role
