"""The entry point (pytest_gpuverify/plugin.py) with the plugin off: its options, marker and fixtures
exist, and nothing of the face, the engine or the layers under it is imported."""

from __future__ import annotations

import sys

import pytest
from conftest import PLUGIN_ARGS

pytest_plugins = ["pytester"]

# what a run without --gpu-verify must not import: the face, and every layer that does the plugin's work
NOT_IMPORTED = tuple(
    f"pytest_gpuverify.{room}"
    for room in (
        "face",
        "engine",
        "place",
        "lease",
        "execute",
        "gpu",
        "parsers",
        "records",
        "remote",
        "reporting",
        "history",
        "verify",
        "slurm",
        "config",
        "common",
    )
)


@pytest.fixture
def unimported(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The package's modules other than the entry point taken out of ``sys.modules`` for the test (put
    back after it), so that a run that imports one shows it there again."""
    names = {name for name in sys.modules if name.startswith(NOT_IMPORTED)}
    for name in names:
        monkeypatch.delitem(sys.modules, name)
    assert names, "the face's tests import the package: the check needs its modules loaded first"
    return names


def imported_again() -> list[str]:
    return sorted(name for name in sys.modules if name.startswith(NOT_IMPORTED))


def test_a_run_without_gpu_verify_imports_nothing_of_the_face(pytester: pytest.Pytester, unimported: set[str]):
    pytester.makepyfile(
        test_plain="""
        import pytest

        @pytest.mark.gpu(gpus=2)
        def test_plain(tmp_path):
            assert tmp_path.is_dir()
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # the gpu marker is known without the plugin's work
    assert imported_again() == []
    assert "pytest_gpuverify.plugin" in sys.modules


def test_the_fixtures_skip_without_gpu_verify_and_import_nothing(pytester: pytest.Pytester, unimported: set[str]):
    pytester.makepyfile(
        test_own="""
        def test_host(gpu_host):
            raise AssertionError("ran without --gpu-verify")

        def test_container(kernel_container):
            raise AssertionError("ran without --gpu-verify")

        def test_locked(locked_gpu):
            raise AssertionError("ran without --gpu-verify")
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*GPU fixture: run with --gpu-verify*"])
    assert imported_again() == []


def test_options_and_ini_keys_exist_with_the_plugin_off(pytester: pytest.Pytester, unimported: set[str]):
    pytester.makeini("[pytest]\ngpu_window = 3\ngpu_pytest_paths = tests/test_*.py\n")
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess(
        *PLUGIN_ARGS, "--gpu-topic=x", "-W", "error::pytest.PytestConfigWarning", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)  # no unknown ini key warning, no unknown option
    help_text = pytester.runpytest_inprocess(*PLUGIN_ARGS, "--help").stdout.str()
    assert "--gpu-verify" in help_text and "gpu_pytest_paths" in help_text
    assert imported_again() == []
