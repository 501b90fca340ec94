"""The live line while a target runs: bytes so far, the last printed line; off under -q, CI, non-tty, -s."""

from __future__ import annotations

from pytest_gpuverify.engine.services import fan_out
from pytest_gpuverify.reporting.live import RunningLine, wants_running_line


def test_line_shows_target_elapsed_bytes_and_last_line():
    shown, now = [], [100.0]
    line = RunningLine(shown.append, "gemm on mi300 gpu 3", clock=lambda: now[0])
    echoed = []
    echo = fan_out(echoed.append, line)
    echo(b"tuning m=1\n\x1b[32mok\x1b[0m m=32\npart")
    now[0] = 165.0
    echo(b"ial\r")
    assert echoed == [b"tuning m=1\n\x1b[32mok\x1b[0m m=32\npart", b"ial\r"], "the user's echo still gets it all"
    assert shown[0] == "running gemm on mi300 gpu 3  0s  32 B  | ok m=32"
    assert shown[-1] == "running gemm on mi300 gpu 3  65s  36 B  | partial"
    line.done()
    assert shown[-1] == ""


def test_off_under_quiet_ci_non_tty_and_dash_s():
    on = dict(isatty=True, verbosity=0, environ={}, echo_output=False)
    assert wants_running_line(**on)
    assert not wants_running_line(**{**on, "verbosity": -1})
    assert not wants_running_line(**{**on, "isatty": False})
    assert not wants_running_line(**{**on, "environ": {"CI": "1"}})
    assert not wants_running_line(**{**on, "environ": {"GITHUB_ACTIONS": "true"}})
    assert not wants_running_line(**{**on, "echo_output": True})
    assert fan_out(None, None) is None
