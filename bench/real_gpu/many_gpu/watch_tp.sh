#!/usr/bin/env bash
# A TP all-reduce held 40 s (TP=4 on 5+ GPUs, else N-1, 2 on 2) beside two one-GPU targets; a foreign
# load (no lock) started on one of the TP GPUs mid-run must make that target INCONCLUSIVE and no other. Prints
# each artifact's verdict, its GPUs' UUIDs, links (nvidia-smi topo -m) and MIG mode, and the multicast env.
#   OUT=/tmp/out bash bench/real_gpu/many_gpu/watch_tp.sh      (lent NVIDIA host, 2-8 GPUs)
# One device call, under 9 minutes; logs, samples, summary JSON and the tickets go to $OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd); . "$here/common.sh"
{ versions; timeout 520 python3 "$here/mixlab.py" watch-tp "$OUT" "$@"; echo "exit $?"; } 2>&1 | tee "$OUT/watch_tp_run.log"
