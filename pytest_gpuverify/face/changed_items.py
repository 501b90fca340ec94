"""pytest wiring of ``--gpu-changed-since REF``: deselect the GPU targets whose files the change did not
touch (the rule is place/changed.py) and say so in one line. Other tests of the session are kept."""

from __future__ import annotations

import pytest

from pytest_gpuverify.face.collectors import GpuTargetItem
from pytest_gpuverify.place.changed import select_changed

PLUGIN_NAME = "gpuverify-changed-since"


class ChangedSince:
    def __init__(self, ref: str) -> None:
        self.ref = ref

    @pytest.hookimpl(tryfirst=True)  # before the shards split what is left
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        targets = [i for i in items if isinstance(i, GpuTargetItem)]
        if not targets:
            return
        chosen = select_changed([i.target for i in targets], self.ref)
        skipped = set(chosen.skipped)
        dropped = [i for i in targets if i.target.name in skipped]
        if dropped:
            items[:] = [i for i in items if i not in dropped]
            config.hook.pytest_deselected(items=dropped)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(chosen.line(self.ref))
