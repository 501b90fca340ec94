"""pytest wiring of ``--gpu-shard``: keep this shard's GPU targets, deselect the others.

Only GPU targets are split (config/shards.py decides which goes where); other tests of the session run
in every shard. Every process that collects (a session, each xdist worker) computes the same split.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

if TYPE_CHECKING:
    from pytest_gpuverify.records.scheduling import ShardRecord
    from pytest_gpuverify.engine.session import VerifySession


class ShardSetting:
    """The shard options, read and checked once (a bad value stops the run before any GPU is touched);
    registered with the role of a process that runs targets, whose engine records the shard."""

    def __init__(self, config: pytest.Config) -> None:
        from pytest_gpuverify.config.shards import load_durations, parse_spec, run_id

        from pytest_gpuverify.config.shards import single_task_warning

        spec = config.getoption("gpu_shard")
        self.index, self.count, self.source = parse_spec(spec, os.environ)
        self.warning = single_task_warning(os.environ, spec)
        self.run, self.run_from = run_id(config.getoption("gpu_shard_run"), os.environ)
        durations = config.getoption("gpu_durations")
        self.durations_path = Path(durations).expanduser() if durations else None
        self.durations = load_durations(self.durations_path) if self.durations_path else {}
        self.engine: Optional[VerifySession] = None

    @pytest.hookimpl(trylast=True)  # after every other plugin's selection
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        record = self.select(config, items)
        if self.engine is not None:
            self.engine.shard = record

    def select(self, config: pytest.Config, items: list) -> Optional[ShardRecord]:
        """Deselect the GPU targets of other shards (in place); the record every artifact carries."""
        from pytest_gpuverify.config.shards import new_session_id, plan_digest, split
        from pytest_gpuverify.records.scheduling import ShardRecord
        from pytest_gpuverify.collectors import GpuTargetItem

        targets = [i for i in items if isinstance(i, GpuTargetItem)]
        ids = [i.nodeid for i in targets]
        seconds = {i.nodeid: self.durations[i.target.topic] for i in targets if i.target.topic in self.durations}
        shards = split(ids, self.count, seconds)
        sizes = [shards.count(s) for s in range(self.count)]
        others = {id(item) for item, shard in zip(targets, shards) if shard != self.index}
        if others:
            config.hook.pytest_deselected(items=[i for i in items if id(i) in others])
            items[:] = [i for i in items if id(i) not in others]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(config, "workerinput"):
            if self.warning:
                reporter.write_line(f"gpuverify: {self.warning}")
            reporter.write_line(f"gpuverify: shard {self.index}/{self.count} ({self.source}): "
                                f"{sizes[self.index]} of {len(targets)} GPU targets"
                                + (f", balanced by {self.durations_path}" if self.durations_path else ""))
        return ShardRecord(index=self.index, count=self.count, read_from=self.source, run=self.run,
                           run_from=self.run_from, plan=plan_digest(ids, self.count), sizes=sizes,
                           session=getattr(config, "workerinput", {}).get("testrunuid") or new_session_id(),
                           durations=str(self.durations_path) if self.durations_path else None)


SHARD_KEY = pytest.StashKey[ShardSetting]()  # --gpu-shard, read once in choose_role
