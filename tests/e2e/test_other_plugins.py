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


LOST_FILTER = """
import warnings

_set = warnings.simplefilter


def _losing_dependency_filters(action, category=Warning, *args, **kwargs):
    # as a race with pytest's catch_warnings can make it: requests' ignore filter for urllib3's
    # DependencyWarning is lost before requests imports the module that warns
    if getattr(category, "__name__", "") != "DependencyWarning":
        _set(action, category, *args, **kwargs)


warnings.simplefilter = _losing_dependency_filters
"""

OWN_TEST = """
def test_gpu_host(gpu_host):
    assert gpu_host.inventory
"""


def test_the_docker_imports_warnings_never_reach_the_warnings_summary(sandbox):
    """urllib3 warns when docker's import (through requests) finds no SOCKS support; the import runs
    in the session's threads while pytest records warnings: it is ours, not the user's to read."""
    suite = sandbox.root / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(LOST_FILTER)
    (suite / "test_own.py").write_text(OWN_TEST)
    proc = sandbox.pytest(str(suite / "test_own.py"), "--rootdir", str(suite))
    text = out(proc)
    assert proc.returncode == 0, text[-2000:]
    assert "DependencyWarning" not in text and "SOCKS support" not in text, text[-3000:]


def test_collect_only_does_not_say_no_target_ran(sandbox):
    proc = sandbox.pytest("--collect-only", "op_tests/test_rmsnorm2d.py")
    text = out(proc)
    assert proc.returncode == 0 and "rmsnorm2d" in text, text[-2000:]
    assert "no GPU targets ran" not in text and "--collect-only: GPU targets were collected, none was run" in text
