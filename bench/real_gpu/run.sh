#!/usr/bin/env bash
# Runs on the lent NVIDIA machine (no Docker there: --gpu-container none). Writes logs and artifacts to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS="$top/.whl"; . "$here/sandbox.sh"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
cd $W/repos/aiter
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== 1. kernels: triton perf_report harness, assert_close test, the same test made wrong"
date +%s.%N
$PT --ticket H200-1 --gpu-target triton-softmax-perf op_tests/triton_tests/test_triton_add.py op_tests/triton_tests/test_triton_add_wrong.py; echo "pytest exit $?"
echo "== 2. another process keeps the GPU busy: --gpu-wait 0 must be NO_GPU"
python3 $here/load.py 25 > $W/load.log 2>&1 & LOAD=$!
sleep 8
$PT --ticket H200-2 --gpu-wait 0 --gpu-topic busy_no_wait op_tests/triton_tests/test_triton_add.py; echo "pytest exit $?"
echo "== 3. same load: --gpu-wait 120 starts after the load ends"
t0=$(date +%s.%N)
$PT --ticket H200-2 --gpu-wait 120 --gpu-topic busy_then_wait op_tests/triton_tests/test_triton_add.py; echo "pytest exit $?"
t1=$(date +%s.%N); wait $LOAD; cat $W/load.log; echo "waited run: start $t0 end $t1"
echo "== 4. gpuverify check on every artifact"
for a in $W/tickets/*/bench_*.json; do python3 -m pytest_gpuverify.cli.main check "$a"; done
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
echo "== 6. xdist: -n 2 spreads targets over both GPUs at once"
cd $W/repos/aiter
$PT -n 2 --ticket H200-3 --gpu-target triton-softmax-perf op_tests/triton_tests/test_triton_add.py op_tests/triton_tests/test_triton_add_wrong.py; echo "pytest exit $?"
python3 - $W/tickets/H200-3 <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("bench_*.json")):
    a = json.loads(p.read_text())
    print(f"{p.name}: verdict {a['verdict']} gpu {a['gpu']['index']} uuid {a['gpu']['uuid']} ran {a['ts']} .. {a['finished_ts']}")
PY
fi
echo "== 7. kill -9 of pytest while its command loads the GPU: the guard stops it, then the lock goes"
python3 $here/kill9.py $W/locks/gpu-0.lock $W/tickets/H200-4 -- $PT --ticket H200-4 --gpu-target gpu-load; echo "kill9 exit $?"
echo "== 8. lock handoff on the real GPU"
cd $top && python3 bench/handoff.py --real sm_90; cd $W/repos/aiter
echo "== 5. NVML backend tests on real hardware"
cd $top && python3 -m pytest -p no:cacheprovider -q tests/test_nvidia_backend.py 2>&1 | tail -5
} 2>&1 | tee "$OUT/h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
tar tzf "$OUT/tickets.tar.gz"
