#!/usr/bin/env bash
# Make sure a Docker Engine answers on this machine: install Debian's docker.io if needed and start
# dockerd in the background. Used by .ci/run and scripts/demo.sh. Needs root on a fresh machine.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  nohup "$(command -v dockerd)" >/tmp/gpuverify-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/gpuverify-dockerd.log" >&2; tail -20 /tmp/gpuverify-dockerd.log >&2; exit 1; }
