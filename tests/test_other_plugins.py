"""Other pytest plugins around GPU targets: pytest-timeout."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker


def out(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("how", [["--timeout", "5"], ["-o", "timeout=5"]])
def test_pytest_timeout_on_a_gpu_target_is_refused_pointing_at_gpu_timeout(sandbox, how):
    """pytest-timeout would stop the command from outside (no exit code, or os._exit and no artifact):
    refused before any target runs, one line naming pytest-timeout and --gpu-timeout."""
    pytest.importorskip("pytest_timeout")
    proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", *how)
    text = out(proc)
    assert proc.returncode == 4, text
    line = next(ln for ln in text.splitlines() if "pytest-timeout's 5 s timeout" in ln)
    assert "GPU target" in line and "--gpu-timeout 5" in line and "--timeout 0" in line, line
    assert not (sandbox.tickets / "T-1").exists() or not list((sandbox.tickets / "T-1").iterdir()), "nothing ran"
    proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", "--timeout", "0")
    assert proc.returncode == 0 and sandbox.artifact("rmsnorm2d").verdict == "PASS", out(proc)[-2000:]
