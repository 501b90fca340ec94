#!/usr/bin/env bash
# Where a session's start goes on the lent H200 (only this plugin loaded, warm caches): the GPU
# library's own calls timed bare, one nvidia-smi, then --gpu-profile of three sessions and one
# session's `python -X importtime` (kept in $OUT). Guides the cuts; the figures are overhead_h200.sh's.
#   WHEELS=/path/wheels OUT=/tmp/out bash bench/real_gpu/start_probe_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}
. "$here/sandbox.sh"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
python3 -m compileall -q /tmp/site $top/pytest_gpuverify > /dev/null
. "$here/compile_pynvml.sh"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
TARGET=op_tests/triton_tests/test_triton_add.py
{
echo "pynvml: $PYNVML_BYTECODE"
echo "== NVML calls, bare (ms)"
for k in 1 2 3; do python3 - <<'PY'
import time
t0 = time.perf_counter(); import pynvml; t1 = time.perf_counter(); pynvml.nvmlInit(); t2 = time.perf_counter()
h = pynvml.nvmlDeviceGetHandleByIndex(0); cc = pynvml.nvmlDeviceGetCudaComputeCapability(h); t3 = time.perf_counter()
m = pynvml.nvmlDeviceGetMemoryInfo(h); u = pynvml.nvmlDeviceGetUtilizationRates(h); t4 = time.perf_counter()
try:
    pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_GPU_UTILIZATION_SAMPLES, 0)
except pynvml.NVMLError as exc:
    print("samples:", exc)
t5 = time.perf_counter(); pynvml.nvmlDeviceGetComputeRunningProcesses(h); t6 = time.perf_counter()
ms = lambda a, b: f"{(b - a) * 1000:.1f}"
print(f"import {ms(t0, t1)}  init {ms(t1, t2)}  handle+cc {ms(t2, t3)}  mem+util {ms(t3, t4)}  samples {ms(t4, t5)}  procs {ms(t5, t6)}")
PY
done
t0=$(date +%s%N); nvidia-smi --query-gpu=compute_cap --format=csv,noheader > /dev/null; t1=$(date +%s%N); echo "nvidia-smi compute_cap: $(( (t1 - t0) / 1000000 )) ms"
cd $W/repos/aiter
for k in 1 2; do $PT -q --ticket W$k $TARGET > /dev/null 2>&1; echo "warm-up $k exit $?"; done
echo "== --gpu-profile, only this plugin, three sessions"
for k in 1 2 3; do $PT -q --ticket P$k --gpu-profile $TARGET 2>&1 | sed -n '/gpuverify profile/,$p'; done
echo "== importtime of one session (file importtime.txt)"
python3 -X importtime -m pytest -s -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q --ticket I1 $TARGET 2> "$OUT/importtime.txt" | tail -1
} 2>&1 | tee "$OUT/start_probe_run.log"
