#!/usr/bin/env bash
# Triton's autotuner on the lent H200, under --gpu-ab: the head commit tries other block sizes than the
# base, so the sides may choose differently. Runs --gpu-ab-cache warm (the default) and cold, and the
# cache_results kernel warm (its measured runs print no choice: the engine reads the cache); prints each
# artifact's ab.cache_state, ab.warmups, autotune record and notes, `gpuverify compare`, `gpuverify check`.
#   WHEELS=/path/wheels bash bench/real_gpu/autotune_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}; . "$here/sandbox.sh"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
cd $W/repos/aiter
echo 'BLOCKS = (1024, 8192)' > op_tests/op_benchmarks/triton/autotune_configs.py
git -c user.name=b -c user.email=b@b commit -qam "head: other block sizes"
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
for run in "AT-WARM triton-autotune" "AT-COLD triton-autotune --gpu-ab-cache cold" "AT-CACHED triton-autotune-cached"; do
  set -- $run; ticket=$1; shift; target=$1; shift
  echo "== $ticket: --gpu-target $target --gpu-ab HEAD~1 $*"
  start=$(date +%s.%N)
  $PT -q --ticket $ticket --gpu-target $target --gpu-ab HEAD~1 "$@" | tail -3
  echo "session seconds: $(echo "$(date +%s.%N) - $start" | bc)"
  art=$W/tickets/$ticket/bench_$target.json
  python3 - "$art" <<'PY'
import json, sys
a = json.loads(open(sys.argv[1]).read())
print(f"verdict {a['verdict']} cache_state {a['ab']['cache_state']} order {a['ab']['order']} warmups "
      f"{[(w['run'], w['side'], w['exit_code']) for w in a['ab']['warmups']]} env {a['env'].get('TRITON_PRINT_AUTOTUNING')}")
t = a["autotune"] or {}
print(f"autotune: {len(t.get('choices', []))} choices, unknown {t.get('unknown')!r}")
for c in t.get("choices", [])[:12]:
    print(f"    run {c['run']} side {c['side']} {c['function']} {c['config']} {c['seconds']}s key {c['key']} from {c['source']} {c['line'] or c['file']}")
for d in t.get("differ", []):
    print(f"    differ: {d}")
for n in a["notes"]:
    if "autotune" in n or "warm-up" in n:
        print(f"    note: {n}")
PY
  python3 -m pytest_gpuverify.cli.main compare "$art" | head -8
  python3 -m pytest_gpuverify.cli.main check "$art" | tail -1
  grep -n "gpuverify .* begins\|best config selected" $W/tickets/$ticket/*.log | head -12
done
} 2>&1 | tee "$OUT/autotune_h200.log"
tar czf "$OUT/autotune_tickets.tar.gz" -C $W/tickets .
