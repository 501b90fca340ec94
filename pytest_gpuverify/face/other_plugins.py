"""What other pytest plugins would do to a GPU target, settled before any target runs.

pytest-timeout stops a test from outside: its signal method raises in the middle of the command's
wait (the exit code is then never read), its thread method ends the process with ``os._exit`` (no
artifact, no lock released in order). A GPU target has its own bound, ``--gpu-timeout``, which stops
the command and still writes the artifact; so a pytest-timeout timeout that applies to a GPU target
is refused, naming where it came from and the fix."""

from __future__ import annotations

import importlib


def timeout_plugin_problem(config, items: list) -> str | None:
    """One line when pytest-timeout would put a timeout on any of ``items`` (GPU targets), else None."""
    if not items or not config.pluginmanager.hasplugin("timeout"):
        return None
    try:  # by name: pytest-timeout ships no type information
        session_wide = importlib.import_module("pytest_timeout").get_env_settings(config).timeout
    except (ImportError, AttributeError):  # another plugin of that name
        return None
    for item in items:
        marker = item.get_closest_marker("timeout")
        seconds = (
            marker.args[0]
            if marker is not None and marker.args
            else marker.kwargs.get("timeout")
            if marker is not None
            else session_wide
        )
        where = "its timeout marker" if marker is not None else "--timeout, the ini's timeout or $PYTEST_TIMEOUT"
        try:
            seconds = float(seconds) if seconds is not None else 0.0
        except (TypeError, ValueError):
            continue  # pytest-timeout reports its own bad value
        if seconds > 0:
            return (
                f"pytest-timeout's {seconds:g} s timeout ({where}) would stop GPU target {item.name} from outside, "
                "leaving no artifact and no exit code. Fix: bound GPU targets with --gpu-timeout "
                f"{seconds:g} (it stops the command and writes the artifact), and run them with --timeout 0"
            )
    return None
