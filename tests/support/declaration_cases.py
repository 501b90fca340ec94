"""Declaration files written into a test's repo and read back, and the checks every declaration error
must pass (one line, the file, the key, a fix)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_gpuverify.config.declarations import DeclarationError, Declarations, load_declarations

# The files of the repo the declarations are read in: a kind is told from each one's path.
FILES = (
    "op_tests/test_gemm_a8w8.py",
    "op_tests/triton_tests/test_gemm.py",
    "tests/kernels/test_moe.py",
    "bench/hillclimb.py",
    "bench/test_other.py",
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def pyproject_form(text: str) -> str:
    """The same declarations under [tool.gpuverify]: top-level keys first, tables prefixed."""
    out = ["[project]", 'name = "demo"', "", "[tool.gpuverify]"]
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[[") or stripped.startswith("["):
            inner = stripped.strip("[]")
            brackets = "[[" if stripped.startswith("[[") else "["
            line = f"{brackets}tool.gpuverify.{inner}{brackets.replace('[', ']')}"
        out.append(line)
    return "\n".join(out) + "\n"


def load(repo: Path, text: str, name: str = "gpuverify.toml") -> Declarations:
    body = pyproject_form(text) if name == "pyproject.toml" else textwrap.dedent(text)
    return load_declarations(write(repo / name, body))


def error(repo: Path, text: str, name: str = "gpuverify.toml") -> DeclarationError:
    with pytest.raises(DeclarationError) as info:
        load(repo, text, name)
    exc = info.value
    rendered = str(exc)
    assert "\n" not in rendered and "Fix: " in rendered and str(repo / name) in rendered
    assert exc.fix and exc.message and exc.path == repo / name
    return exc


def assert_place(exc: DeclarationError, *fragments: str, key: str) -> None:
    assert exc.key == key
    assert f"key {key!r}" in exc.where
    for fragment in fragments:
        assert fragment in exc.where, (fragment, exc.where)
        assert fragment in str(exc)
