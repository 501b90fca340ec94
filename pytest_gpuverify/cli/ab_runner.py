"""One A/B session run as its own pytest process, for the commands that act on a compare (``gpuverify
bisect``, ``gpuverify compare --confirm``): ``pytest --gpu-verify --gpu-target T --gpu-ab BASE
--gpu-repeats N --ticket KEY`` in the head's checkout, so the session's own protocol holds (one lock on
one GPU, A B A B ..., each side's caches, the base worktree removed after). The artifact it wrote is
found through its JUnit report (each target's ``gpuverify_artifact`` property), held to ``gpuverify
check``, and its rows called by compare's own path (``decide``)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gpuverify.compare.command import Refused, checked, decide
from pytest_gpuverify.compare.core import DEFAULT_RULE, Comparison, Rule
from pytest_gpuverify.place.gitstate import run_git
from pytest_gpuverify.records.artifact import Artifact

DEFAULT_REPEATS = 5  # the fewest runs a side with which compare's error rates were measured (4 is the least)
SESSION_TIMEOUT_S = 6 * 3600  # a session of slow targets; a hung one must still end the loop


@dataclass
class AbOutcome:
    """What one A/B session gave: its artifact and calls, or why there are none (``problem``, one line)."""

    command: list[str]
    returncode: int | None = None
    artifact_path: Path | None = None
    artifact: Artifact | None = None
    result: Comparison | None = None
    problem: str | None = None
    output_tail: list[str] = field(default_factory=list)


def made_up_ticket(prefix: str, sha: str) -> str:
    """A ticket key of its own per session, so no session's artifact replaces another's."""
    return f"{prefix}-{sha[:12]}-{uuid.uuid4().hex[:6]}"


def session_command(
    target: str, base: str, repeats: int, ticket: str, pytest_args: Sequence[str], junit: Path
) -> list[str]:
    # the caller's options go after ours, so a second --gpu-repeats or --ticket of theirs wins; the
    # JUnit report goes last: the artifact is found through it
    return [
        sys.executable,
        "-m",
        "pytest",
        "--gpu-verify",
        "--gpu-target",
        target,
        "--gpu-ab",
        base,
        "--gpu-repeats",
        str(repeats),
        "--ticket",
        ticket,
        *pytest_args,
        f"--junitxml={junit}",
    ]


def artifacts_in_report(junit: Path) -> list[Path]:
    """The artifact paths the session's targets reported (their ``gpuverify_artifact`` properties)."""
    try:
        tree = ET.parse(junit)
    except (OSError, ET.ParseError):
        return []
    return [
        Path(p.get("value", ""))
        for p in tree.iter("property")
        if p.get("name") == "gpuverify_artifact" and p.get("value")
    ]


def _tail(text: str, lines: int = 20) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][-lines:]


def run_ab(
    checkout: Path,
    target: str,
    base: str,
    repeats: int = DEFAULT_REPEATS,
    ticket: str | None = None,
    pytest_args: Sequence[str] = (),
    rule: Rule = DEFAULT_RULE,
    timeout_s: float = SESSION_TIMEOUT_S,
) -> AbOutcome:
    """Run ``target`` as an A/B of ``base`` against the checkout's HEAD and call its rows. Never raises
    for what the session did: a session that wrote no artifact, an artifact failing check or not PASS
    is ``problem``."""
    with tempfile.TemporaryDirectory(prefix="gpuverify-ab-") as scratch:
        junit = Path(scratch) / "session.xml"
        cmd = session_command(target, base, repeats, ticket or made_up_ticket("ab", base), pytest_args, junit)
        outcome = AbOutcome(cmd)
        try:
            proc = subprocess.run(cmd, cwd=checkout, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            outcome.problem = f"the A/B session ran past {timeout_s:g} s and was stopped"
            return outcome
        except OSError as exc:
            outcome.problem = f"the A/B session could not start: {exc}"
            return outcome
        outcome.returncode = proc.returncode
        outcome.output_tail = _tail(proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace"))
        found = artifacts_in_report(junit)
    if len(found) != 1:
        said = outcome.output_tail[-1] if outcome.output_tail else "no output"
        outcome.problem = (
            f"the A/B session (pytest exit {proc.returncode}) reported {len(found)} artifact(s) of "
            f"--gpu-target {target}, not one: {said}"
        )
        return outcome
    outcome.artifact_path = found[0]
    try:
        outcome.artifact = checked(str(found[0]))
        outcome.result = decide(outcome.artifact, None, rule, labels=(f"the A/B ({found[0]})",) * 2)
    except Refused as exc:
        outcome.problem = f"the A/B session's artifact: {exc}"
    return outcome


def head_of(checkout: Path) -> tuple[Path | None, str | None]:
    """The git top level of ``checkout`` and the commit it has checked out (None, None: not a git checkout)."""
    top = run_git(checkout, "rev-parse", "--show-toplevel")
    sha = run_git(checkout, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if top is None or sha is None or top.returncode or sha.returncode:
        return None, None
    return Path(top.stdout.strip()), sha.stdout.strip()


def commit_sha(checkout: Path, ref: str) -> str | None:
    res = run_git(checkout, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return res.stdout.strip() if res is not None and res.returncode == 0 and res.stdout.strip() else None


def is_ancestor(checkout: Path, older: str, newer: str) -> bool:
    res = run_git(checkout, "merge-base", "--is-ancestor", older, newer)
    return res is not None and res.returncode == 0
