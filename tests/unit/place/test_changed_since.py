"""``--gpu-changed-since``'s rule on a real git checkout: main, a branch forked from it, a change on
each; only the targets whose files the branch changed since its fork point are kept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.place.changed import select_changed


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "kernels"
    for name in ("op_tests/test_gemm.py", "op_tests/test_norm.py", "bench/moe.py", "bench/moe.yaml", "csrc/x.cu"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("# v1\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "checkout", "-qb", "pr")
    (repo / "bench/moe.yaml").write_text("# v2\n")  # named by the moe target's arguments only
    _git(repo, "commit", "-qam", "the PR's change")
    _git(repo, "checkout", "-q", "main")
    (repo / "op_tests/test_norm.py").write_text("# v2 on main, after the fork\n")
    _git(repo, "commit", "-qam", "main moves on")
    _git(repo, "checkout", "-q", "pr")
    return repo


def _targets(repo: Path) -> list[Target]:
    return [
        Target(name="gemm", kind="aiter-op-test", path=repo / "op_tests/test_gemm.py", topic="gemm"),
        Target(name="norm", kind="aiter-op-test", path=repo / "op_tests/test_norm.py", topic="norm"),
        Target(
            name="moe",
            kind="bench",
            command=("python3", "bench/moe.py"),
            args=("--config=bench/moe.yaml",),
            anchor=repo,
            topic="moe",
        ),
        Target(name="loose", kind="bench", command=("python3", "-c", "pass"), anchor=repo, topic="loose"),
    ]


def test_only_targets_whose_files_changed_since_the_fork_point_run(repo):
    chosen = select_changed(_targets(repo), "main")
    # norm changed on main after the fork: REF...HEAD is the PR's own change, so norm is skipped
    assert chosen.kept == ["moe", "loose"] and chosen.skipped == ["gemm", "norm"] and chosen.unknown == ["loose"]
    assert chosen.line("main") == (
        "--gpu-changed-since main: 2 of 4 target(s) run; skipped, none of their files changed: gemm, norm; "
        "kept, no file of theirs known: loose"
    )


def test_a_folder_target_runs_once_a_file_under_it_changed(repo):
    folder = Target(name="ops", kind="flydsl-pytest", path=repo / "op_tests", topic="ops")
    assert select_changed([folder], "main").skipped == ["ops"]
    (repo / "op_tests/test_gemm.py").write_text("# v3\n")
    _git(repo, "commit", "-qam", "touch gemm")
    assert select_changed([folder], "main").kept == ["ops"]


def test_a_ref_git_cannot_diff_keeps_every_target_and_says_why(repo):
    chosen = select_changed(_targets(repo)[:2], "origin/main")
    assert chosen.kept == ["gemm", "norm"] and not chosen.skipped
    line = chosen.line("origin/main")
    assert line.startswith("--gpu-changed-since origin/main: 2 of 2 target(s) run; kept, git diff origin/main...HEAD")
    assert "fetch origin/main" in line and "\n" not in line


def test_a_declarations_paths_count_as_the_targets_files(repo):
    """``paths`` globs, relative to the declaration's directory, read through the real declarations file."""
    from pytest_gpuverify.config.declarations import load_declarations

    (repo / "gpuverify.toml").write_text(
        '[[targets]]\nname = "gemm"\npath = "op_tests/test_gemm.py"\npaths = ["csrc/**/*.cu"]\n\n'
        '[[targets]]\nname = "norm"\npath = "op_tests/test_norm.py"\npaths = ["./csrc/norm/*"]\n'
    )
    decls = load_declarations(repo / "gpuverify.toml")
    gemm = next(t for t in decls.targets if t.name == "gemm")
    assert gemm.paths == (f"{repo.resolve().as_posix()}/csrc/**/*.cu",)
    assert select_changed(decls.targets, "main").skipped == ["gemm", "norm"]  # the PR changed bench/moe.yaml only
    (repo / "csrc/x.cu").write_text("# v3\n")
    _git(repo, "commit", "-qam", "a kernel source gemm declares")
    chosen = select_changed(decls.targets, "main")
    assert chosen.kept == ["gemm"] and chosen.skipped == ["norm"]
    assert select_changed([gemm.model_copy(update={"paths": ()})], "main").skipped == ["gemm"]  # its own file alone


@pytest.mark.parametrize(
    "paths, said",
    [
        ('"csrc/**"', "paths is a string, not a list of globs"),
        ('["../other/**"]', "paths names '../other/**', outside this file's directory"),
        ('["/abs/**"]', "paths names '/abs/**', outside this file's directory"),
    ],
)
def test_bad_paths_are_one_line_with_the_fix(tmp_path, paths, said):
    from pytest_gpuverify.config.declarations import DeclarationError, load_declarations

    toml = tmp_path / "gpuverify.toml"
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.py").write_text("")
    toml.write_text(f'[[targets]]\nname = "x"\nkind = "bench"\npath = "bench/x.py"\npaths = {paths}\n')
    with pytest.raises(DeclarationError, match="Fix") as caught:
        load_declarations(toml)
    assert said in str(caught.value) and str(toml) in str(caught.value)
