"""What a session reads of a place is kept for the next sessions (place/facts_cache.py) only while what
it rests on holds: each cache is shown to be taken, then dropped by each thing it rests on. Real
sessions on the simulated host, in a real container; what ran in it is read from the engine's events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.place.facts_cache import CACHE_FILE, FactsCache

KEPT = "kept from an earlier session"
TARGET = "op_tests/test_rmsnorm2d.py"


def _what(command: str) -> str:
    for word, what in (("rocminfo", "arch"), ("pytorch-triton-rocm", "versions"), ("GPUVERIFY-ORIGIN", "import check")):
        if word in command:
            return what
    return "other"


class Sessions:
    """Sessions of one user in a sandbox, with a temporary folder of their own (the cache's file)."""

    def __init__(self, sandbox, tmp: Path) -> None:
        self.box, self.n = sandbox, 0
        tmp.mkdir(mode=0o700)
        # the real interpreter's folder first: the host's python3 is then the one the session runs on
        self.env = {"TMPDIR": str(tmp), "PATH": f"{sandbox.sim_bin}:{Path(sys.executable).parent}:{os.environ['PATH']}"}
        self.cache = tmp / f"gpuverify-{os.getuid()}" / CACHE_FILE

    def run(self, *args: str) -> tuple[object, list[str]]:
        """One session of the target: its artifact, and what it ran in the container (arch, versions, import check)."""
        self.n += 1
        ticket, since = f"T-{self.n}", time.time()
        proc = self.box.pytest(TARGET, *args, ticket=ticket, env=self.env)
        art = self.box.artifact("rmsnorm2d", ticket)
        assert art.verdict == "PASS", proc.stdout.decode()[-3000:]
        checks = [_what(c) for c in demo.exec_commands(self.box.client, self.box.container, since)]
        return art, sorted(c for c in checks if c != "other")


def _kept(art) -> str:
    return next((n for n in art.notes if n.startswith(KEPT)), "")


@pytest.fixture
def sessions(sandbox, tmp_path):
    return Sessions(sandbox, tmp_path / "own-tmp")


def test_a_containers_facts_are_kept_until_it_is_restarted(sessions, sandbox):
    first, ran = sessions.run()
    assert ran == ["arch", "import check", "versions"] and _kept(first) == ""
    second, ran = sessions.run()
    assert ran == [], "the second session read nothing of the container again"
    assert "the facts of" in _kept(second) and "the import check of aiter" in _kept(second)
    assert second.versions == first.versions and second.env.get("GPU_ARCHS") == first.env.get("GPU_ARCHS")
    assert [g.arch for g in second.gpus] == [g.arch for g in first.gpus]
    sandbox.client.containers.get(sandbox.container).restart(timeout=1)  # a new start time, the same id
    third, ran = sessions.run()
    assert ran == ["arch", "import check", "versions"] and _kept(third) == ""
    assert third.versions == first.versions
    # a cache file that cannot be parsed is an empty cache: everything is read again, the file rewritten
    sessions.cache.write_text("{not json")
    fourth, ran = sessions.run()
    assert ran == ["arch", "import check", "versions"] and _kept(fourth) == ""
    kept = json.loads(sessions.cache.read_text())
    # rewritten whole: the container's facts, the import check and the machine's fixed identity
    assert len(kept) == 3 and sum(k.startswith(("container-facts:", "machine:")) for k in kept) == 2, list(kept)
    assert FactsCache(sessions.cache.parent).get("container-facts:none") is None


def test_the_import_check_is_asked_again_after_a_commit_and_after_each_edit(sessions, sandbox):
    """The first session's answer is kept (the test above shows it taken); each change of the worktree
    drops it, and an uncommitted state met again is kept."""
    repo = sandbox.repo
    sessions.run()
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "a new commit",
        ],
        check=True,
    )
    art, ran = sessions.run()
    assert ran == ["import check"], "a new commit: the import check ran, the container's facts were kept"
    assert "the import check" not in _kept(art) and "the facts of" in _kept(art)
    edited = repo / "op_tests" / "test_rmsnorm2d.py"
    edited.write_text(edited.read_text() + "\n# an edit\n")
    _, ran = sessions.run("--gpu-allow-dirty")
    assert ran == ["import check"], "an edited file: asked again"
    _, ran = sessions.run("--gpu-allow-dirty")
    assert ran == [], "the same uncommitted state: kept"
    time.sleep(0.01)  # a change time of its own, even on a coarse clock
    edited.write_text(edited.read_text() + "# edited again, a file already uncommitted\n")
    _, ran = sessions.run("--gpu-allow-dirty")
    assert ran == ["import check"]


def test_on_the_host_the_import_check_is_asked_again_after_a_commit(sessions, sandbox):
    """--gpu-container none: the check runs on the host's python3, kept while it, the folders it
    imports from and the worktree stay the same."""
    host = ("--gpu-container", "none")
    first, _ = sessions.run(*host)
    second, _ = sessions.run(*host)
    assert _kept(first) == "" and "the import check of aiter" in _kept(second)
    assert second.imports == first.imports
    subprocess.run(
        [
            "git",
            "-C",
            str(sandbox.repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "a new commit",
        ],
        check=True,
    )
    third, _ = sessions.run(*host)
    assert _kept(third) == "" and third.imports == first.imports


def test_on_the_host_the_arch_is_read_once_by_the_gpu_start(sessions, sandbox, tmp_path):
    """The host place's GPUs are the host's: its arch is the one the session's start read (rocminfo,
    once), not read again for the place; a host of another arch still blocks its targets."""
    from pytest_gpuverify.simulator import SimState, install

    calls = tmp_path / "rocminfo-calls"
    path = sessions.env["PATH"]

    def counted(sim_bin: Path) -> str:  # PATH with a rocminfo that notes each run, then runs sim_bin's
        shim = tmp_path / f"shim-{sim_bin.name}"
        shim.mkdir()
        (shim / "rocminfo").write_text(f'#!/bin/sh\necho ran >> "{calls}"\nexec "{sim_bin / "rocminfo"}" "$@"\n')
        (shim / "rocminfo").chmod(0o755)
        return f"{shim}:{sim_bin}:{path}"

    sessions.env["PATH"] = counted(sandbox.sim_bin)
    art, _ = sessions.run("--gpu-container", "none")
    assert calls.read_text().splitlines() == ["ran"]
    assert [g.arch for g in art.gpus] == ["gfx942"]
    other = tmp_path / "sim950"
    install(other, SimState.idle(gpus=4, arch="gfx950"))
    calls.unlink()
    proc = sandbox.pytest(
        TARGET, "--gpu-container", "none", ticket="T-arch", env=dict(sessions.env, PATH=counted(other))
    )
    wrong = sandbox.artifact("rmsnorm2d", "T-arch")
    assert wrong.verdict == "INCONCLUSIVE" and any("gfx950" in r and "gfx942" in r for r in wrong.reasons), (
        proc.stdout.decode()[-2000:]
    )
    assert calls.read_text().splitlines() == ["ran"]
