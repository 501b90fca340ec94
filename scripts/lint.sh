#!/usr/bin/env bash
# Lint, layout and types: ruff's rules and `ruff format --check` on the package, tests, bench and scripts;
# mypy on the package. The rules are in pyproject.toml ([tool.ruff], [tool.mypy]). Exits non-zero on any
# finding; `ruff format .` and `ruff check --fix .` repair most of them.
set -u
cd "$(dirname "$0")/.."
rc=0
paths=(pytest_gpuverify tests bench scripts conftest_examples)
ruff check "${paths[@]}" || rc=1
ruff format --check "${paths[@]}" || rc=1
mypy pytest_gpuverify || rc=1
exit $rc
