#!/usr/bin/env bash
# One command on a fresh machine: install the plugin, bring up Docker, build the simulated ROCm host
# (fake rocm-smi/amd-smi/rocminfo + a real container), and run `pytest --gpu-verify` on three targets.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-docker.sh
python3 -m pip install -q -e .  # the runtime only: the demo needs no test tools
rm -rf .demo
exec gpuverify demo --dir .demo "$@"
