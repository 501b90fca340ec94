"""The prediction's rules: what a target's command puts before its PYTHONPATH (pytest's rootdir and ini
``pythonpath``, conftest and test folders, the working or script folder), read from real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.place.import_rules import find_ini, import_front, read_ini


def write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def pytest_target(path: Path, *args: str) -> Target:
    return Target(name="t", kind="pytest", path=path, topic="t", args=args)


@pytest.mark.parametrize(
    "name, text, entries",
    [
        ("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["src", "."]\n', ("src", ".")),
        ("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = "src lib"\n', ("src", "lib")),
        ("pytest.ini", "[pytest]\npythonpath = src\n", ("src",)),
        ("pytest.ini", "[pytest]\npythonpath =\n    src\n    third_party/x\n", ("src", "third_party/x")),
        ("tox.ini", "[tox]\nenvlist = py3\n[pytest]\npythonpath = src\n", ("src",)),
        ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\npythonpath = src\n", ("src",)),
        ("pytest.toml", '[pytest]\npythonpath = ["src"]\n', ("src",)),
    ],
)
def test_each_ini_file_gives_its_pythonpath(tmp_path, name, text, entries):
    ini = read_ini(write(tmp_path, name, text))
    assert ini is not None and ini.pythonpath == entries and ini.problem is None


def test_files_without_a_pytest_section_are_not_ini_files_but_an_empty_pytest_ini_is(tmp_path):
    assert read_ini(write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')) is None
    assert read_ini(write(tmp_path, "tox.ini", "[tox]\nenvlist = py3\n")) is None
    assert read_ini(write(tmp_path, "setup.cfg", "[metadata]\nname = x\n")) is None
    empty = read_ini(write(tmp_path, "pytest.ini", ""))
    assert empty is not None and empty.pythonpath == ()
    broken = read_ini(write(tmp_path / "b", "pytest.ini", "pythonpath = src\n"))  # no section header
    assert broken is not None and broken.problem and "pytest.ini" in broken.problem


def test_the_ini_is_looked_for_from_the_test_up_to_the_worktree_and_pytest_ini_wins_in_a_folder(tmp_path):
    wt = tmp_path / "wt"
    write(wt, "pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["from-pyproject"]\n')
    write(wt, "pytest.ini", "[pytest]\npythonpath = from-ini\n")
    write(wt, "tests/pyproject.toml", '[project]\nname = "no-pytest-table"\n')  # skipped: no pytest table
    test = write(wt, "tests/test_a.py")
    found = find_ini(test, wt)
    assert found is not None and found.path == wt / "pytest.ini" and found.pythonpath == ("from-ini",)
    write(tmp_path, "pytest.ini", "[pytest]\npythonpath = outside\n")
    assert find_ini(write(tmp_path / "other", "test_b.py"), tmp_path / "other") is None  # not above the worktree


def test_a_liger_like_src_layout_puts_src_after_the_test_folder_and_before_the_working_folder(tmp_path):
    wt = tmp_path / "Liger-Kernel"
    write(wt, "src/liger_kernel/__init__.py")
    write(
        wt, "pyproject.toml", '[project]\nname = "liger_kernel"\n[tool.pytest.ini_options]\npythonpath = ["src", "."]\n'
    )
    test = write(wt, "test/transformers/test_rms_norm.py")
    front = import_front(pytest_target(test), wt, "/ws/Liger-Kernel", "/ws/Liger-Kernel")
    assert front.dirs == ["/ws/Liger-Kernel/test/transformers", "/ws/Liger-Kernel/src", "/ws/Liger-Kernel"]
    assert "pythonpath = src in pyproject.toml" in front.said[1]


def test_a_flaggems_like_pytest_ini_in_a_subfolder_is_relative_to_its_own_folder(tmp_path):
    wt = tmp_path / "FlagGems"
    write(wt, "src/flag_gems/__init__.py")
    write(wt, "tests/pytest.ini", "[pytest]\npythonpath = ../src\n")
    write(wt, "tests/conftest.py")
    test = write(wt, "tests/test_binary_pointwise_ops.py")
    front = import_front(pytest_target(test), wt, "/w", "/w")
    assert front.dirs == ["/w/tests", "/w/src", "/w"]


def test_a_package_of_tests_puts_its_parent_first_unless_it_is_already_on_the_path(tmp_path):
    wt = tmp_path / "wt"
    write(wt, "tests/__init__.py")
    write(wt, "tests/unit/__init__.py")
    test = write(wt, "tests/unit/test_x.py")
    # the basedir (the worktree, the first folder up that is not a package) is the working folder already
    assert import_front(pytest_target(test), wt, "/w", "/w").dirs == ["/w"]
    # run from a subfolder: the worktree goes first, the working folder stays after it
    sub = import_front(pytest_target(test), wt, "/w", "/w/tests")
    assert sub.dirs == ["/w", "/w/tests"]


def test_a_conftest_folder_goes_first_and_one_on_pythonpath_does_not(tmp_path):
    wt = tmp_path / "wt"
    write(wt, "conftest.py")
    write(wt, "tests/kernels/conftest.py")
    test = write(wt, "tests/kernels/test_k.py")
    assert import_front(pytest_target(test), wt, "/w", "/w").dirs == ["/w/tests/kernels", "/w"]
    assert import_front(pytest_target(test), wt, "/w", "/w", ["/w/tests/kernels"]).dirs == ["/w"]


def test_c_and_rootdir_among_the_args_choose_the_ini_and_its_base(tmp_path):
    wt = tmp_path / "wt"
    write(wt, "pytest.ini", "[pytest]\npythonpath = wrong\n")
    write(wt, "ci/pytest-gpu.ini", "[pytest]\npythonpath = src\n")
    test = write(wt, "tests/test_a.py")
    chosen = import_front(pytest_target(test, "-c", "ci/pytest-gpu.ini"), wt, "/w", "/w")
    assert chosen.dirs == ["/w/tests", "/w/ci/src", "/w"]  # relative to the ini's folder, its rootdir
    rooted = import_front(pytest_target(test, "-c", "ci/pytest-gpu.ini", "--rootdir=."), wt, "/w", "/w")
    assert rooted.dirs == ["/w/tests", "/w/src", "/w"]


def test_scripts_put_their_folder_first_and_other_commands_nothing(tmp_path):
    wt = tmp_path / "aiter"
    script = write(wt, "op_tests/test_gemm.py")
    op_test = Target(name="g", kind="aiter-op-test", path=script, topic="g")
    assert import_front(op_test, wt, "/ws/aiter", "/ws/aiter").dirs == ["/ws/aiter/op_tests"]
    module = Target(name="b", kind="bench", command=("python3", "-u", "-m", "bench.run"), topic="b", anchor=wt)
    assert import_front(module, wt, "/ws/aiter", "/ws/aiter/bench").dirs == ["/ws/aiter/bench"]
    declared = Target(name="b", kind="bench", command=("python", "bench/lab.py", "--n", "3"), topic="b", anchor=wt)
    assert import_front(declared, wt, "/ws/aiter", "/ws/aiter").dirs == ["/ws/aiter/bench"]
    shell = Target(name="s", kind="bench", command=("bash", "run.sh"), topic="s", anchor=wt)
    assert import_front(shell, wt, "/ws/aiter", "/ws/aiter").dirs == []
