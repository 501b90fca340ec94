"""Declarations of any repo's own pytest files: ``kind = "pytest"`` with a file or a folder, ``pass_pattern`` and
``fail_pattern`` compiled at load time, and the ``gpu_pytest_paths`` globs."""

from __future__ import annotations

from pathlib import Path

import pytest
from declaration_cases import assert_place, error, load

from pytest_gpuverify.config.targets import PYTEST, TRITON_PYTEST, kind_for_path

T = '[[targets]]\nname = "t"\n'


def test_a_pytest_target_takes_a_file_or_a_folder(repo: Path) -> None:
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "test_add.py").write_text("def test_x():\n    pass\n")
    decls = load(
        repo,
        T + 'kind = "pytest"\npath = "tests"\n' + '[[targets]]\nname = "u"\nkind = "pytest"\n'
        'path = "tests/test_add.py"\nargs = ["-k", "add"]\n',
    )
    folder, file = decls.targets
    assert (folder.kind, folder.path, folder.topic) == (PYTEST, (repo / "tests").resolve(), "t")
    assert (file.kind, file.path, file.args) == (PYTEST, (repo / "tests" / "test_add.py").resolve(), ("-k", "add"))


def test_a_folder_needs_the_pytest_kind(repo: Path) -> None:
    (repo / "tests").mkdir(exist_ok=True)
    exc = error(repo, T + 'kind = "triton-pytest"\npath = "tests"\n')
    assert_place(exc, "targets[1] (t)", key="path")
    assert "is not a file" in exc.message


def test_declared_words_are_kept(repo: Path) -> None:
    decls = load(
        repo,
        T + 'kind = "bench"\ncommand = "python3 bench/hillclimb.py"\n'
        'pass_pattern = "✅ Triton and Torch match"\nfail_pattern = "❌ .* differ"\n',
    )
    target = decls.targets[0]
    assert (target.pass_pattern, target.fail_pattern) == ("✅ Triton and Torch match", "❌ .* differ")


def test_a_trace_filter_is_kept(repo: Path) -> None:
    decls = load(repo, T + 'kind = "bench"\ncommand = "python3 bench/b.py"\ntrace_filter = "^(add|matmul)_kernel$"\n')
    assert decls.targets[0].trace_filter == "^(add|matmul)_kernel$"


@pytest.mark.parametrize("key", ["pass_pattern", "fail_pattern", "trace_filter"])
def test_a_bad_regular_expression_names_file_target_and_key(repo: Path, key: str) -> None:
    exc = error(repo, T + f'kind = "bench"\ncommand = "python3 bench/hillclimb.py"\n{key} = "(unclosed"\n')
    assert_place(exc, "targets[1] (t) at line 1", key=key)
    assert "is not a regular expression (missing ), unterminated subpattern" in exc.message
    assert "escape" in exc.fix


def test_a_pattern_must_be_text(repo: Path) -> None:
    exc = error(repo, T + 'kind = "bench"\ncommand = "x"\nfail_pattern = 3\n')
    assert_place(exc, "targets[1] (t)", key="fail_pattern")


@pytest.mark.parametrize(
    "rel, globs, kind",
    [
        ("tests/test_add.py", ("tests/test_*.py",), PYTEST),
        ("tests/sub/test_add.py", ("tests/test_*.py",), None),  # * stays in one folder
        ("tests/sub/test_add.py", ("tests/**/test_*.py",), PYTEST),
        ("test/gemm_check.py", ("test/*_check.py",), PYTEST),  # any name the glob gives, not only test_*
        ("tests/test_add.py", (), None),  # not aiter's, not FlyDSL's layout: no target without a glob
        ("op_tests/triton_tests/test_x.py", ("op_tests/**/test_*.py",), TRITON_PYTEST),  # a layout keeps its kind
    ],
)
def test_gpu_pytest_paths(tmp_path: Path, rel: str, globs: tuple[str, ...], kind) -> None:
    assert kind_for_path(tmp_path / rel, globs, tmp_path) == kind
