#!/usr/bin/env bash
# A/A of one Triton target (the matmul of bench/real_gpu/repo, 5 repeats a session) across two GPUs of one
# host, against the one-GPU A/A in the same call: three sessions pinned by CUDA_VISIBLE_DEVICES (GPU A, GPU A
# again, GPU B), then `gpuverify compare` of A vs A and of A vs B. Expected: no row IMPROVED or REGRESSED in
# either, or compare refuses A vs B saying how the GPUs differ (clocks, power cap). Prints both calls' counts.
# One device call, under 9 minutes; logs, compare outputs and the tickets go to $OUT.
#   OUT=/tmp/out bash bench/real_gpu/many_gpu/aa_gpus.sh [GPU_A GPU_B]     (lent NVIDIA host, 2-8 GPUs)
set -u
here=$(cd "$(dirname "$0")" && pwd); . "$here/common.sh"
A=${1:-0}; B=${2:-$((N > 1 ? N - 1 : 0))}  # the first and the last GPU: the furthest apart on the board
mine=$here; here=$top/bench/real_gpu; . "$here/sandbox.sh"; here=$mine  # the one-GPU runs' lab: $W
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q"
GV="python3 -m pytest_gpuverify.cli.main"
T=triton-matmul-block
compare() {  # name, then compare's arguments: the table and the JSON kept, the calls counted
  local name=$1; shift
  (cd $top && $GV compare "$@") > "$OUT/compare_$name.txt" 2>&1; echo "compare $name exit $?"
  (cd $top && $GV compare --json "$@") > "$OUT/compare_$name.json" 2>/dev/null
  cat "$OUT/compare_$name.txt"
  python3 - "$OUT/compare_$name.json" <<'PY'
import collections, json, sys
try:
    pairs = json.load(open(sys.argv[1]))["pairs"]
except (ValueError, KeyError):
    sys.exit(print("no JSON (refused)"))
print("calls:", dict(collections.Counter(p["call"] for p in pairs)))
PY
}
{
versions
[ "$N" -ge 2 ] || { echo "one GPU: no A/A across GPUs here"; exit 0; }
cd $W/repos/aiter
echo "== 0. warm-up (Triton's compile cache) on GPU $A and GPU $B"
for g in $A $B; do CUDA_VISIBLE_DEVICES=$g python3 op_tests/op_benchmarks/triton/bench_matmul_block.py | tail -2; done
for t in "AA-$A-1 $A" "AA-$A-2 $A" "AA-$B $B"; do set -- $t
  echo "== session $1 on GPU $2, 5 repeats"
  CUDA_VISIBLE_DEVICES=$2 timeout 150 $PT --ticket $1 --gpu-target $T --gpu-repeats 5; echo "pytest $1 exit $?"
done
echo "== 1. A/A on one GPU ($A vs $A)"
compare aa_one_gpu $W/tickets/AA-$A-1/bench_$T.json $W/tickets/AA-$A-2/bench_$T.json
echo "== 2. A/A across GPUs ($A vs $B)"
compare aa_two_gpus $W/tickets/AA-$A-1/bench_$T.json $W/tickets/AA-$B/bench_$T.json
echo "== 3. gpuverify check"
(cd $top && $GV check $W/tickets/AA-$A-1 $W/tickets/AA-$A-2 $W/tickets/AA-$B | tail -3)
} 2>&1 | tee "$OUT/aa_gpus_run.log"
tar czf "$OUT/aa_gpus_tickets.tar.gz" -C $W/tickets .
