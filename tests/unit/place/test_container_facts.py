"""A container's facts (place/provenance.py): the arch gates the run and is read before it; the
versions gate nothing, so the first command does not wait for their read, and the artifact does."""

from __future__ import annotations

import json
import threading

from pytest_gpuverify.execute.base import Place
from pytest_gpuverify.execute.container import ContainerError
from pytest_gpuverify.place.container_checks import check_container
from pytest_gpuverify.place.provenance import read_container_facts

ROCMINFO = "*******\nAgent 2\n*******\n  Name:                    gfx942\n  Device Type:             GPU\n"
VERSIONS = {"python": "3.12.3", "torch": "2.5.0", "triton": None, "hip": "6.4.1", "cuda": None, "rocm": "6.4.1"}


class SlowVersionsContainer:
    """A running container whose ``python3`` (the versions' read) waits for ``release``."""

    name = "c1"
    image = "img"
    running = True

    def __init__(self, fail: BaseException | None = None) -> None:
        self.release = threading.Event()
        self.fail = fail

    def inspect(self, refresh: bool = False) -> dict:
        return {"Image": "sha256:1", "Config": {"Env": ["GPU_ARCHS=gfx942", "PATH=/usr/bin"]}}

    def capture(self, argv, env=None, workdir="/", timeout_s=None, limit=None):
        if argv[0] == "python3":
            assert self.release.wait(30)
            if self.fail is not None:
                raise self.fail
            return 0, json.dumps(VERSIONS).encode() + b"\n"
        return 0, ROCMINFO.encode()


def test_the_facts_are_back_with_the_arch_while_the_versions_are_still_being_read():
    container = SlowVersionsContainer()
    facts = read_container_facts(container, "rocm")  # returns although python3 has not answered
    assert (facts.arch, facts.arch_problem) == ("gfx942", None) and facts.container_env == {"GPU_ARCHS": "gfx942"}
    check = check_container(facts, Place("c1"), "gfx942")
    assert check.blocked == [] and facts.reading is not None
    container.release.set()
    assert check.versions is not None and (check.versions.torch, check.versions.hip) == ("2.5.0", "6.4.1")
    assert check.unknowns == ["versions: triton is null: not installed in c1"]


def test_a_versions_read_that_fails_is_a_recorded_unknown_not_a_lost_artifact():
    container = SlowVersionsContainer(fail=ContainerError("container c1 is gone"))
    facts = read_container_facts(container, "rocm")
    container.release.set()
    assert facts.versions_read()[0].python is None
    assert facts.versions_read()[1] == ["versions: could not be read in c1 (container c1 is gone)"]
    broken = SlowVersionsContainer(fail=RuntimeError("a bug"))  # not only the errors we expect
    facts = read_container_facts(broken, "rocm")
    broken.release.set()
    assert facts.versions_read()[1] == ["versions: could not be read in c1 (a bug)"] and facts.arch == "gfx942"


def test_a_run_that_ended_before_its_command_does_not_wait_for_the_versions_nor_spoil_them():
    """An interrupt (or a block) during the checks ends the run at once: its artifact says the versions
    were not read; the session's next target, which runs, waits for them and records them."""
    container = SlowVersionsContainer()
    facts = read_container_facts(container, "rocm")
    stopped = check_container(facts, Place("c1"), "gfx942")
    stopped.settle(ran=False)  # returns although python3 has not answered
    assert stopped.versions is not None and stopped.versions.torch is None
    assert stopped.unknowns == ["versions: not read in c1: the run ended before its command"]
    container.release.set()
    ran = check_container(facts, Place("c1"), "gfx942")
    ran.settle(ran=True)
    assert ran.versions is not None and ran.versions.torch == "2.5.0"
    assert stopped.unknowns == ["versions: not read in c1: the run ended before its command"]  # kept as said
