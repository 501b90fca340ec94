"""What every role of a ``--gpu-verify`` process has (face/roles.py, face/slurm_role.py): the plugins
it brings along, an INCONCLUSIVE verdict's status, and SIGTERM and SIGHUP taking Ctrl-C's path."""

from __future__ import annotations

import signal
import threading

import pytest

from pytest_gpuverify.execute.base import Terminated

ROLE_NAME = "gpuverify-role"  # in the plugin manager ("gpuverify" is the plugin module, pyproject.toml)


class Role:
    """This process's part in a ``--gpu-verify`` run, registered as a pytest plugin while it lasts:
    the plugins it brings along, the signal handlers it replaced, an INCONCLUSIVE verdict's status."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.helpers: list[tuple[object, str]] = []  # (plugin, name): registered and unregistered with the role
        self._previous_handlers: dict = {}  # signal -> the handler this role replaced, put back at unregister

    def register(self) -> None:
        manager = self.config.pluginmanager
        manager.register(self, ROLE_NAME)
        for plugin, name in self.helpers:
            manager.register(plugin, name)

    def unregister(self) -> None:
        manager = self.config.pluginmanager
        for plugin, _ in reversed(self.helpers):
            if manager.is_registered(plugin):
                manager.unregister(plugin)
        if manager.is_registered(self):
            manager.unregister(self)
        for signum, handler in self._previous_handlers.items():  # an embedding process gets its own back
            signal.signal(signum, handler)
        self._previous_handlers = {}

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config):
        if report.when != "call":
            return None
        if dict(report.user_properties).get("gpuverify_verdict") == "INCONCLUSIVE":
            return "inconclusive", "I", "INCONCLUSIVE"
        return None


def terminate_like_ctrl_c() -> dict:
    """SIGTERM (a CI job cancelled, a scheduler's stop) and SIGHUP (the terminal closed, the ssh
    session to a login node dropped) take Ctrl-C's path: the command is stopped, the lock released
    and the artifact written with the reason. Returns the handlers it replaced (signal -> handler),
    put back when the role ends."""

    def on_signal(signum, frame):
        raise Terminated(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGHUP)}
