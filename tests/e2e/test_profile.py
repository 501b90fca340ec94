"""--gpu-profile (common/profile.py): where a session's milliseconds went, phase by phase."""

from __future__ import annotations

import re
import threading
import time

from pytest_gpuverify.common.profile import Profile, process_started, profile_lines


def _ms(lines: list[str], name: str) -> float:
    line = next(ln for ln in lines if ln.strip().startswith(name))
    return float(re.search(r"([0-9.]+) ms", line[len(name) + 2 :]).group(1))


def test_phases_on_the_path_add_up_and_phases_in_threads_are_listed_apart():
    profile = Profile()
    profile.mark("plugin loaded", 100.0)
    profile.add("env file", 100.0, 100.010)
    profile.add("container facts", 100.100, 100.300)
    profile.add("container facts", 100.400, 100.450)
    profile.add("import check", 100.200, 100.250)  # inside container facts: counted once in "other"
    worker = threading.Thread(
        target=profile.add, args=("GPU start (library, window, arch)", 100.0, 100.5), name="gpuverify-start"
    )
    worker.start()
    worker.join()
    lines = profile_lines(profile, now=101.0)
    assert _ms(lines, "env file") == 10.0 and _ms(lines, "container facts") == 250.0
    assert "x2" in next(ln for ln in lines if ln.startswith("container facts"))
    assert _ms(lines, "other (pytest, collection, hooks)") == 740.0  # 1000 - (10 + 200 + 50)
    assert _ms(lines, "plugin loaded -> this line") == 1000.0
    alongside = lines.index("alongside, in threads (not on the path):")
    assert lines[alongside + 1].split()[:2] == ["GPU", "start"] and _ms(lines[alongside + 1 :], "GPU start") == 500.0
    assert not any("GPU start" in ln for ln in lines[:alongside])


def test_the_process_start_is_read_and_lies_before_now():
    started = process_started()
    assert started is not None and 0 < time.monotonic() - started < 24 * 3600


def test_a_session_prints_its_profile_with_the_command_apart(sandbox):
    proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", "--gpu-profile")
    text = proc.stdout.decode()
    assert proc.returncode == 0, text[-3000:]
    lines = text[text.index("gpuverify profile (this process)") :].splitlines()[1:]
    for phase in (
        "process start -> plugin loaded",
        "pydantic and settings imported",
        "env file",
        "engine imported",
        "engine built",
        "container facts",
        "import check",
        "GPU picked and locked (the wait)",
        "command (the target's own)",
        "raw log parsed",
        "verdict and artifact built",
        "artifact validated and stored",
        "other (pytest, collection, hooks)",
    ):
        assert _ms(lines, phase) >= 0, phase
    assert _ms(lines, "command (the target's own)") > 0
    assert "gpuverify profile" not in sandbox.pytest("op_tests/test_rmsnorm2d.py", ticket="T-2").stdout.decode()
