"""The package under test of every kind (place/packages.py) and each kind's environment (targets.kind_env)."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.config.targets import RunEnvironment, Target, pythonpath
from pytest_gpuverify.place.packages import check_imports, packages_under_test


def target(tmp_path: Path, kind: str, **kw) -> Target:
    return Target(name="t", kind=kind, topic="t", path=tmp_path / "tests" / "test_x.py", **kw)


def project(root: Path, name: str, layout: str = "src", tool: str = "") -> None:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n{tool}')
    if layout:
        pkg = root / ("src" if layout == "src" else "") / name.replace("-", "_")
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")


def test_the_declaration_then_the_kind_then_the_repos_project(tmp_path):
    project(tmp_path, "kernel-kit")
    assert packages_under_test(target(tmp_path, "pytest", packages=("a", "b")), tmp_path).names == ("a", "b")
    assert packages_under_test(target(tmp_path, "pytest", packages=()), tmp_path).names == ()
    assert packages_under_test(target(tmp_path, "aiter-op-test"), tmp_path).names == ("aiter",)
    assert packages_under_test(target(tmp_path, "flydsl-pytest"), tmp_path).names == ("flydsl",)
    found = packages_under_test(target(tmp_path, "pytest"), tmp_path)
    assert found.names == ("kernel_kit",) and "kernel-kit" in found.source and not found.required
    assert packages_under_test(target(tmp_path, "bench"), tmp_path).names == ("kernel_kit",)


def test_a_build_backends_package_name_wins_where_it_is_in_the_checkout(tmp_path):
    project(tmp_path, "pytorch-kernels", layout="", tool='[tool.hatch.build.targets.wheel]\npackages = ["src/ptk"]\n')
    (tmp_path / "src" / "ptk").mkdir(parents=True)
    assert packages_under_test(target(tmp_path, "pytest"), tmp_path).names == ("ptk",)


def test_a_project_whose_package_is_missing_from_the_checkout_is_still_checked(tmp_path):
    project(tmp_path, "kernelkit", layout="")  # the checkout lacks it: an installed copy must not pass for it
    assert packages_under_test(target(tmp_path, "pytest"), tmp_path).names == ("kernelkit",)


def test_no_project_no_package_with_a_note(tmp_path):
    (tmp_path / "tests").mkdir()
    under = packages_under_test(target(tmp_path, "pytest"), tmp_path)
    result = check_imports(under, "/w", {}, lambda p, e: (None, None))
    assert under.names == () and result.imports == {} and "no package under test was checked" in result.notes[0]


def test_an_origin_outside_the_worktree_blocks_not_importable_only_notes_a_guess(tmp_path):
    project(tmp_path, "kernelkit")
    under = packages_under_test(target(tmp_path, "pytest"), tmp_path)
    installed = "/usr/lib/python3/site-packages/kernelkit/__init__.py"
    outside = check_imports(under, "/w", {"PYTHONPATH": "/w"}, lambda p, e: (installed, None))
    assert outside.imports == {"kernelkit": installed}
    assert outside.blocked == [
        f"kernelkit imports from {installed}, outside the worktree /w/: the run would test another copy"
    ]
    inside = check_imports(under, "/w", {}, lambda p, e: ("/w/src/kernelkit/__init__.py", None))
    assert inside.blocked == [] and inside.imports == {"kernelkit": "/w/src/kernelkit/__init__.py"}
    missing = check_imports(under, "/w", {}, lambda p, e: (None, "kernelkit is not importable in c"))
    assert missing.blocked == [] and missing.imports == {} and "not importable" in missing.notes[0]
    declared = packages_under_test(target(tmp_path, "pytest", packages=("kernelkit",)), tmp_path)
    assert check_imports(declared, "/w", {}, lambda p, e: (None, "kernelkit is not importable in c")).blocked


def test_the_import_path_goes_before_the_places_own():
    assert pythonpath("pytest", "/w", "/opt/site:/x") == "/w:/opt/site:/x"
    assert pythonpath("flydsl-pytest", "/w") == "/w/python:/w/build-fly/python_packages"


def env_of(kind: str) -> dict[str, str]:
    return RunEnvironment(
        visible_var="HIP_VISIBLE_DEVICES",
        visible_value="3",
        pythonpath="/w",
        kind=kind,
        arch="gfx942",
        caches={"TRITON_CACHE_DIR": "/c/t"},
        declared={"MY_FLAG": "1"},
    ).as_env()


def test_each_kind_gets_only_the_variables_that_serve_it():
    for kind in ("pytest", "flydsl-pytest"):
        env = env_of(kind)
        assert "COLUMNS" not in env and "GPU_ARCHS" not in env, kind
        assert env["MY_FLAG"] == "1" and env["TRITON_CACHE_DIR"] == "/c/t"
    assert env_of("aiter-op-test")["COLUMNS"] == "10000" and env_of("aiter-op-test")["GPU_ARCHS"] == "gfx942"
    assert env_of("triton-pytest")["GPU_ARCHS"] == "gfx942" and "COLUMNS" not in env_of("triton-pytest")
    assert "GPU_ARCHS" not in env_of("bench") and env_of("bench")["COLUMNS"] == "10000"


def test_aiters_jit_folder_only_for_aiter_kinds():
    from pytest_gpuverify.place.caches import plan_caches

    assert "AITER_JIT_DIR" in plan_caches("/w", False, "r", "aiter-op-test").dirs
    assert "AITER_JIT_DIR" not in plan_caches("/w", False, "r", "pytest").dirs


def test_packages_declared_empty_is_a_note_that_says_so(tmp_path):
    """``packages = []`` turns the import check off: the note says that (it said only ``declaration``)."""
    project(tmp_path, "kernel-kit")
    under = packages_under_test(target(tmp_path, "pytest", packages=()), tmp_path)
    result = check_imports(under, "/w", {}, lambda p, e: (None, None))
    assert result.notes == ["no package under test was checked: the declaration says packages = []"]
    assert result.imports == {} and result.blocked == []
