"""A GPU host whose workers die at their start: the session stops at the bound with the words of a death
that told its cause. execnet hands xdist "Not properly terminated" for a worker whose channel closed
before its error came through; when that worker is the one at the bound, its words say nothing."""

from __future__ import annotations

from pytest_gpuverify.remote.lost import START_TRIES, LostHosts

USAGE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/_pytest/config/__init__.py", line 1, in parse\n'
    "    self._parser.parse_setoption(args)\n"
    "_pytest.config.exceptions.UsageError: -c: error: unrecognized arguments: --no-such-gpu-option\n"
    "  inifile: /home/u/pytest.ini\n"
)


def test_the_bound_stops_with_the_words_of_a_death_that_told_them():
    hosts = LostHosts(5.0, None)
    assert START_TRIES == 2
    assert hosts.start_failed("stray", "gw0", USAGE) is None, "the first death is replaced"
    reason = hosts.start_failed("stray", "gw1", "Not properly terminated")
    assert reason is not None and reason.startswith("host stray: its workers could not start (2 tried; gw0: ")
    assert "unrecognized arguments: --no-such-gpu-option" in reason and "inifile: /home/u/pytest.ini" in reason
    assert "Not properly terminated" not in reason and "Fix:" in reason


def test_the_death_at_the_bound_gives_its_own_words_where_it_told_them():
    hosts = LostHosts(5.0, None)
    hosts.start_failed("stray", "gw0", "Not properly terminated")
    reason = hosts.start_failed("stray", "gw1", USAGE)
    assert reason is not None and "(2 tried; gw1: " in reason and "--no-such-gpu-option" in reason
    untold = LostHosts(5.0, None)
    untold.start_failed("h", "gw0", "Not properly terminated")
    said = untold.start_failed("h", "gw1", None)
    assert said is not None and "(2 tried; gw0: Not properly terminated)" in said, "nothing better was said"
