#!/usr/bin/env bash
# The GPU watch on a real NVIDIA GPU, in one call: (1) a clean run of a real kernel test under the plugin
# (its artifact's clocks, temperature, power and throttle reasons, no foreign process); (2) the same target
# while another process that takes no lock starts on the locked GPU mid-run (a torch matmul loop holding
# 8 GiB), which must make it INCONCLUSIVE naming that pid; (3) the watch's CPU cost per second of command
# through NVML (bench/watch_cost.py). Logs and artifacts go to $OUT.
#   WHEELS=/path/wheels bash bench/real_gpu/watch_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd); WHEELS=${WHEELS:-$top/../.whl}
. "$here/sandbox.sh"
R=$W/repos/aiter
cat > $R/op_tests/triton_tests/test_slow_add.py <<'PY'
# A kernel test that keeps its GPU busy for about 3 s per shape: Triton's add against torch's.
import time

import pytest
import torch
from triton_add import add


@pytest.mark.parametrize("n", [1 << 20, 1 << 22, 1 << 24])
def test_slow_add(n):
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    end = time.time() + 3
    while time.time() < end:
        out = add(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
PY
cat > $W/foreign.py <<'PY'
# Another user's job that takes no lock: imports torch, waits for its cue, then computes on GPU 0.
import os, sys, time
import torch
cue, seconds = sys.argv[1], float(sys.argv[2])
while not os.path.exists(cue):
    time.sleep(0.05)
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
hold = torch.empty(8 << 30, dtype=torch.uint8, device="cuda:0")
print(f"foreign pid {os.getpid()} on gpu 0 from {time.time():.3f}", flush=True)
end = time.time() + seconds
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
print(f"foreign end {time.time():.3f}", flush=True)
PY
git -C $R add -A && git -C $R -c user.name=b -c user.email=b@b commit -qm "a slow kernel test"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
cd $R
echo "== 1. clean run"
$PT -q --ticket WATCH-1 op_tests/triton_tests/test_slow_add.py 2>&1 | tail -4
echo "== 2. a process that takes no lock starts on the locked GPU mid-run"
rm -f $W/cue; python3 $W/foreign.py $W/cue 6 > $W/foreign.log 2>&1 & fpid=$!
( while [ -z "$(ls $W/tickets/WATCH-2/*.log 2>/dev/null)" ]; do sleep 0.1; done; sleep 1; touch $W/cue ) &
$PT -q --ticket WATCH-2 op_tests/triton_tests/test_slow_add.py 2>&1 | tail -4
wait $fpid; cat $W/foreign.log; echo "foreign pid (shell's view) $fpid"
echo "== the artifacts"
for t in WATCH-1 WATCH-2; do python3 - $W/tickets/$t/bench_slow_add.json <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
print(sys.argv[1].split("/")[-2], a["verdict"], a["reasons"][:2])
for w in a["watch"]:
    print(" watch:", json.dumps({k: w[k] for k in ("backend", "interval_s", "samples", "foreign", "problems")}))
    for c in w["clocks"]:
        print(" clocks:", json.dumps(c))
PY
done
python3 -m pytest_gpuverify.cli.main check $W/tickets/WATCH-1 $W/tickets/WATCH-2; echo "check exit $?"
echo "== 3. the watch's CPU cost through NVML"
python3 $top/bench/watch_cost.py --nvml --seconds 10
} 2>&1 | tee $OUT/watch_h200.log
cp -r $W/tickets $OUT/tickets 2>/dev/null; tar -C $W -czf $OUT/tickets.tgz tickets
