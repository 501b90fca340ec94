"""The live line while a target runs (terminal only): target, host, GPU, elapsed time, output bytes so
far and the last printed line, so a 20-minute tuning run does not look hung. It is fed by the stream
of the command's output (the ``echo`` the executors call) and drawn by the wait's live line
(:func:`live_line`: a line rewritten in place on a pytest terminal)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping

_CONTROL = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x1f\x7f]")


def wants_running_line(*, isatty: bool, verbosity: int, environ: Mapping[str, str], echo_output: bool) -> bool:
    """Off under -q, in CI (CI or GITHUB_ACTIONS set), on a non-tty, and with -s (the output shows itself)."""
    return (
        isatty
        and verbosity >= 0
        and not echo_output
        and not environ.get("CI")
        and environ.get("GITHUB_ACTIONS") != "true"
    )


def running_line_wanted(config, echo_output: bool) -> bool:
    """For a pytest config: a tty terminal, not an xdist worker (its terminal is not the user's)."""
    import os

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    isatty = bool(reporter is not None and getattr(reporter, "isatty", False)) and not hasattr(config, "workerinput")
    # -v/-q as a number: Config.get_verbosity is pytest 8's; the option is every supported pytest's
    verbosity = int(config.getoption("verbose", 0) or 0)
    return wants_running_line(isatty=isatty, verbosity=verbosity, environ=os.environ, echo_output=echo_output)


class RunningLine:
    def __init__(self, show: Callable[[str], None], label: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._show, self._label, self._clock = show, label, clock
        self._start = clock()
        self.bytes = 0
        self.last = ""
        self._tail = b""

    def text(self) -> str:
        return f"running {self._label}  {self._clock() - self._start:.0f}s  {self.bytes} B  | {self.last}"

    def feed(self, data: bytes) -> None:
        self.bytes += len(data)
        lines = (self._tail + data).replace(b"\r", b"\n").split(b"\n")
        self._tail = lines[-1][-4096:]
        done = [line for line in lines[:-1] if line.strip()]
        if done:
            self.last = _CONTROL.sub("", done[-1].decode(errors="replace")).strip()
        try:
            self._show(self.text())  # the show cuts it to the terminal's width and throttles it
        except Exception:  # a line on the terminal never breaks a run
            pass

    def done(self) -> None:
        try:
            self._show("")
        except Exception:
            pass


def live_line(config):
    """A line on the terminal that says what a target waits for (--gpu-wait), rewritten in place."""
    last = [0.0]

    def show(text: str) -> None:
        writer = config.get_terminal_writer()
        now = time.monotonic()
        if text and now - last[0] < 0.5:
            return
        last[0] = now
        width = max(20, writer.fullwidth - 1)
        line = "\r" + (f"gpuverify: {text}" if text else "")[:width].ljust(width) + ("" if text else "\r")
        capture = config.pluginmanager.getplugin("capturemanager")
        if capture is None:
            writer.write(line, flush=True)
            return
        with capture.global_and_fixture_disabled():  # the target runs under capture; this line must show
            writer.write(line, flush=True)

    return show
