#!/usr/bin/env bash
# Lint and types: ruff on the package, tests and bench; mypy on the package.
# The rules are in pyproject.toml ([tool.ruff], [tool.mypy]). Exits non-zero on any finding of either.
set -u
cd "$(dirname "$0")/.."
rc=0
ruff check pytest_gpuverify tests bench || rc=1
mypy pytest_gpuverify || rc=1
exit $rc
