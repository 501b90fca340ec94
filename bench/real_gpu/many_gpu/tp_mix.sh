#!/usr/bin/env bash
# Two sessions at once (two users' worth), each with two TP=4 NCCL all-reduce targets (TP=N on fewer than
# 4 GPUs) and eight one-GPU Triton targets, beside the sampler (NVML process lists, marked processes, /proc/locks
# every 50 ms). Prints overlaps, lost results, deadlock, the TP waits and the makespan against the ideal packing.
#   OUT=/tmp/out bash bench/real_gpu/many_gpu/tp_mix.sh                  (lent NVIDIA host, 2-8 GPUs)
#   OUT=/tmp/out bash bench/real_gpu/many_gpu/tp_mix.sh --dry-run-sim    (here: simulated host, CPU stand-ins;
#                                                                         proves the orchestration, not the GPUs)
# One device call, under 9 minutes; logs, samples, summary JSON and the tickets go to $OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd); . "$here/common.sh"
{ versions; timeout 520 python3 "$here/mixlab.py" tp-mix "$OUT" "$@"; echo "exit $?"; } 2>&1 | tee "$OUT/tp_mix_run.log"
