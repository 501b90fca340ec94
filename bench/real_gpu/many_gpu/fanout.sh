#!/usr/bin/env bash
# The eight one-GPU Triton targets with xdist, one worker per GPU, against one worker on GPU 0: the
# wall ratio (goal <= 1.15/N + start cost / one-GPU wall) and every artifact's GPU the one its lock names.
#   OUT=/tmp/out bash bench/real_gpu/many_gpu/fanout.sh  [--dry-run-sim]
# One device call, under 9 minutes; logs, samples, summary JSON and the tickets go to $OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd); . "$here/common.sh"
{ versions; timeout 520 python3 "$here/mixlab.py" fanout "$OUT" "$@"; echo "exit $?"; } 2>&1 | tee "$OUT/fanout_run.log"
