"""Copies a session thread takes of process-wide dicts while the main thread changes them."""

import os
import sys
import threading

import pytest

from pytest_gpuverify.common.threads import environ_copy
from pytest_gpuverify.gpu.amdsmi_lib import _import_amdsmi


@pytest.fixture(autouse=True)
def _switch_often():
    """Threads take turns every microsecond, not every 5 ms: a walk that can meet a change does."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _churn(stop: threading.Event, change) -> threading.Thread:
    def run() -> None:
        i = 0
        while not stop.is_set():
            change(i)
            i += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_environ_copy_survives_a_variable_set_and_removed_meanwhile():
    stop = threading.Event()

    def change(i: int) -> None:  # as pytest sets and drops PYTEST_CURRENT_TEST
        name = f"GPUVERIFY_TEST_CHURN_{i % 64}"
        if i % 2:
            os.environ.pop(name, None)
        else:
            os.environ[name] = "x"

    thread = _churn(stop, change)
    try:
        copies = [environ_copy() for _ in range(300)]
    finally:
        stop.set()
        thread.join()
        for i in range(64):
            os.environ.pop(f"GPUVERIFY_TEST_CHURN_{i}", None)
    assert all(copy.get("PATH") == os.environ.get("PATH") for copy in copies)


def test_amdsmi_import_attempt_survives_imports_in_other_threads(tmp_path):
    """A failed import cleans its modules out of sys.modules; other threads import meanwhile (the
    main thread collects while the sampler loads the library): the walk must not meet them."""
    stop = threading.Event()

    def change(i: int) -> None:
        name = f"gpuverify_churn_{i % 256}"
        if name in sys.modules:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = type(sys)(name)

    thread = _churn(stop, change)
    try:
        answers = [_import_amdsmi({"ROCM_PATH": str(tmp_path)}) for _ in range(200)]
    finally:
        stop.set()
        thread.join()
        for i in range(256):
            sys.modules.pop(f"gpuverify_churn_{i}", None)
    assert all(module is None and why == "no amdsmi module" for module, why in answers)
