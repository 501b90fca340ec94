"""Options whose values can be checked before any GPU or container is touched are checked then:
one line naming the option and the fix, exit 4 (pytest's usage error), and no run."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker


def out(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def refused(sandbox, *args: str) -> str:
    proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", *args)
    text = out(proc)
    assert proc.returncode == 4, text[-3000:]
    assert not (sandbox.tickets / "T-1").exists(), "nothing ran: no ticket folder was made"
    assert sandbox.exec_ids() == [], "nothing was run in the container"
    return next(line for line in text.splitlines() if line.startswith("ERROR: ")), text


def test_a_ci_summary_into_a_missing_folder_is_refused_before_the_run(sandbox, tmp_path):
    path = tmp_path / "missing" / "summary.md"
    line, _ = refused(sandbox, "--gpu-ci-summary", str(path))
    assert line == (
        f"ERROR: --gpu-ci-summary {path}: folder {path.parent} does not exist. "
        f"Fix: `mkdir -p {path.parent}`, or name a file in an existing folder"
    ), line


def test_a_container_not_in_the_env_file_is_refused_before_the_run(sandbox):
    line, _ = refused(sandbox, "--gpu-container", "someone-elses")
    assert line.startswith(f"ERROR: --gpu-container someone-elses is not in the Containers table of {sandbox.env_path}")
    assert sandbox.container in line and "Fix: add a row for it" in line, line


def test_an_ab_ref_that_does_not_resolve_is_refused_before_the_run(sandbox):
    line, _ = refused(sandbox, "--gpu-ab", "no-such-branch")
    assert line == (
        f"ERROR: --gpu-ab no-such-branch: not a commit in {sandbox.repo}. Fix: name a branch, tag or sha "
        "that `git rev-parse` knows there (e.g. --gpu-ab HEAD~1 or origin/main)"
    ), line
