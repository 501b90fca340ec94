"""Where the time after a target's command goes, in one pytest process run here: the command's end
-> the last phase of the session (engine/profile.py) -> pytest.main's return (pytest's reports, its
clean-up) -> the interpreter's exit (printed by the caller's clock). Prints wall-clock seconds.

    python3 exit_split.py <pytest arguments...>; date +%s.%N   (the difference to "returned" is the exit)
"""

import sys
import time

import pytest

from pytest_gpuverify.engine.profile import PROFILE

offset = time.time() - time.monotonic()
rc = pytest.main(sys.argv[1:])
returned = time.monotonic()
command = next(s for s in PROFILE.spans if s.phase.startswith("command"))
last = max(s.end for s in PROFILE.spans)
print(f"exit split: command end -> last phase {1000 * (last - command.end):.1f} ms, last phase -> pytest.main "
      f"returned {1000 * (returned - last):.1f} ms; returned at {offset + returned:.6f} (exit {rc})")
sys.stdout.flush()
