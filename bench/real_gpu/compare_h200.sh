#!/usr/bin/env bash
# `gpuverify compare` on the lent NVIDIA machine (no Docker there: --gpu-container none), one call:
#  1. A/A, default repeats (one run a session): two sessions of one commit, their artifacts compared;
#  2. A/A, --gpu-ab HEAD with 5 rounds: the same commit on both sides, interleaved;
#  3. A/B of a real change: the Triton matmul's tile (block_config.py) 128 -> 32, --gpu-ab HEAD~1, 5 rounds.
# Expected: no row IMPROVED or REGRESSED in 1 and 2; in 3 the Triton rows REGRESSED (a 32-wide tile
# is slower), torch's own matmul rows (the change never touches them) not called either way.
# Logs, compare outputs (table and --json) and the artifacts go to $OUT.
#   OUT=/tmp/out bash bench/real_gpu/compare_h200.sh      (wheels from $WHEELS, default <checkout>/.whl)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}; . "$here/sandbox.sh"
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
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
cd $W/repos/aiter
echo "== 0. warm-up (Triton's compile cache)"; python3 op_tests/op_benchmarks/triton/bench_matmul_block.py | tail -5
echo "== 1. A/A, default repeats: two sessions of $(git rev-parse --short HEAD)"
for t in AA-1 AA-2; do $PT --ticket $t --gpu-target $T; echo "pytest $t exit $?"; done
compare aa_default $W/tickets/AA-1/bench_$T.json $W/tickets/AA-2/bench_$T.json
echo "== 2. A/A, --gpu-ab HEAD, 5 rounds"
$PT --ticket AA-AB --gpu-target $T --gpu-ab HEAD --gpu-repeats 5; echo "pytest exit $?"
compare aa_ab $W/tickets/AA-AB/bench_$T.json
echo "== 3. A/B: the tile 128 -> 32, --gpu-ab HEAD~1, 5 rounds"
sed -i 's/^BLOCK = 128/BLOCK = 32/' op_tests/op_benchmarks/triton/block_config.py
git -c user.name=b -c user.email=b@b commit -qam "matmul tile 32"; git log --oneline | head -2
$PT --ticket AB --gpu-target $T --gpu-ab HEAD~1 --gpu-repeats 5; echo "pytest exit $?"
compare ab_block $W/tickets/AB/bench_$T.json
echo "== 4. gpuverify check over the artifacts"
(cd $top && $GV check $W/tickets/AA-1 $W/tickets/AA-2 $W/tickets/AA-AB $W/tickets/AB | tail -4)
} 2>&1 | tee "$OUT/compare_h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
