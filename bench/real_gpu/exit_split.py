"""Where the time after a target's command goes, in one pytest process run here: the command's end
-> the last phase of the session (common/profile.py) -> pytest.main's return (pytest's reports, its
clean-up) -> the interpreter's exit (printed by the caller's clock). Also each end hook's time (all
plugins), and pytest's garbage collections at its end (its unraisable-exception check: pytest's own
function timed, a bench's look inside, as of pytest 8-9). Prints milliseconds.

    python3 exit_split.py <pytest arguments...>; date +%s.%N   (the difference to "returned" is the exit)
"""

import gc
import sys
import time

import pytest

from pytest_gpuverify.common.profile import PROFILE

try:
    import _pytest.unraisableexception as unraisable
except ImportError:
    unraisable = None
timings: list[str] = []
if unraisable is not None and hasattr(unraisable, "gc_collect_harder"):
    collect = unraisable.gc_collect_harder

    def timed_collect(iterations: int) -> None:
        tracked, frozen = len(gc.get_objects()), gc.get_freeze_count()
        t = time.monotonic()
        collect(iterations)
        timings.append(
            f"pytest's {iterations} collections {1000 * (time.monotonic() - t):.1f} "
            f"({tracked} objects walked, {frozen} frozen)"
        )

    unraisable.gc_collect_harder = timed_collect


class EndHooks:
    def _timed(self, name):
        t = time.monotonic()
        yield
        timings.append(f"{name} {1000 * (time.monotonic() - t):.1f}")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self):
        yield from self._timed("sessionfinish (all plugins)")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_terminal_summary(self):
        yield from self._timed("terminal summary (all plugins)")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_unconfigure(self):
        yield from self._timed("unconfigure (all plugins)")


offset = time.time() - time.monotonic()
rc = pytest.main(sys.argv[1:], plugins=[EndHooks()])
returned = time.monotonic()
command = next(s for s in PROFILE.spans if s.phase.startswith("command"))
last = max(s.end for s in PROFILE.spans)
print(
    f"exit split (ms): command end -> last phase {1000 * (last - command.end):.1f}, last phase -> pytest.main "
    f"returned {1000 * (returned - last):.1f}: {'; '.join(timings)}; returned at {offset + returned:.6f} (exit {rc})"
)
print("modules:", len(sys.modules), "torch imported" if "torch" in sys.modules else "no torch")
sys.stdout.flush()
