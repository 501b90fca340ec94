#!/usr/bin/env bash
# The oldest versions pyproject.toml allows, tested: a venv with each dependency at its lowest pin runs
# the unit tests, and the Docker SDK reaches the Engine. A minimum stated there and not kept here is a
# promise nobody checked (pytest 7.4 and docker 7.0 were once allowed and did not work).
# Usage: bash scripts/oldest-pins.sh [VENV]   (default: a fresh folder under $TMPDIR, removed after)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-$(mktemp -d)/oldest-pins}"
python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
# one line per requirement of pyproject.toml, at its lowest version (the team extra's psycopg, Starlette and
# uvicorn, and the test extra's hypothesis and pyyaml too)
"${pip[@]}" 'pytest==7.4.*' 'pluggy==1.3.*' 'pydantic==2.5.*' 'docker==7.1.*' 'pytest-xdist==3.5.*' 'json5==0.9.*' \
  'filelock==3.12.*' 'hyperscan==0.8.*' 'sqlalchemy==2.0.*' 'alembic==1.13.*' \
  'in-toto-attestation==0.9.*' 'cryptography==42.0.*' 'psycopg[binary]==3.1.*' \
  'hypothesis==6.90.*' 'markdown==3.5.*' 'jsonschema==4.18.*' 'starlette==0.37.*' 'uvicorn==0.29.*' 'pyyaml==6.0.*'
"${pip[@]}" --no-deps -e .
"$venv/bin/python" - <<'PY'
from importlib.metadata import version
print("oldest pins:", ", ".join(f"{n} {version(n)}" for n in
      ("pytest", "pluggy", "pydantic", "docker", "pytest-xdist", "json5", "filelock", "hyperscan", "sqlalchemy",
       "alembic", "in-toto-attestation", "cryptography", "psycopg", "starlette", "uvicorn")))
import docker
docker.from_env(timeout=10).ping()  # the SDK's http+docker transport with this requests
PY
"$venv/bin/python" -m pytest -q -x -n 2 -p no:cacheprovider tests/unit
