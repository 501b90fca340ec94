#!/usr/bin/env bash
# The session's own load and the re-check under the lock, on the lent NVIDIA GPU, in one call: three
# sessions back to back, each of 16 GPU-heavy pytest targets that keep the GPU busy to their last
# moment (bf16 matmuls and a Triton add, no idle tail). NVML's utilisation figure still averages over a
# command that ended a moment before; the next target's re-check must not take it for another user's.
# Prints each session's verdicts and the NO_GPU count of all 48 (expected: 0), and each NO_GPU's reason.
# Then the other side: a process that takes no lock holds the GPU as a session's targets end; its
# targets must be NO_GPU or INCONCLUSIVE, never PASS. Logs and artifacts go to $OUT.
#   WHEELS=/path/wheels bash bench/real_gpu/nogpu_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd); WHEELS=${WHEELS:-$top/.whl}
. "$here/sandbox.sh"
R=$W/repos/aiter
for i in $(seq -w 1 16); do cat > $R/op_tests/triton_tests/test_hot_$i.py <<'PY'
# Busy to its last moment: matmuls and a Triton add for about 1.5 s, checked, with no idle tail.
import time

import torch
from triton_add import add


def test_hot():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x, y = torch.rand(1 << 24, device="cuda"), torch.rand(1 << 24, device="cuda")
    end = time.time() + 1.5
    while time.time() < end:
        for _ in range(10):
            a @ a
        out = add(x, y)
        torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
PY
done
cat > $W/foreign.py <<'PY'
# Another user's job that takes no lock: computes on GPU 0 from its cue on, for SECONDS.
import os, sys, time
import torch
cue, seconds = sys.argv[1], float(sys.argv[2])
while not os.path.exists(cue):
    time.sleep(0.05)
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
print(f"foreign pid {os.getpid()} on gpu 0 from {time.time():.3f}", flush=True)
end = time.time() + seconds
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
print(f"foreign end {time.time():.3f}", flush=True)
PY
git -C $R add -A && git -C $R -c user.name=b -c user.email=b@b commit -qm "16 GPU-heavy targets"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
verdicts() {  # the ticket folders named: each session's verdict counts, every NO_GPU reason, the total
  python3 - "$@" <<'PY'
import collections, json, pathlib, sys
total = collections.Counter()
for ticket in sys.argv[1:]:
    arts = [json.loads(p.read_text()) for p in sorted(pathlib.Path(ticket).glob("bench_hot_*.json"))]
    count = collections.Counter(a["verdict"] for a in arts)
    total.update(count)
    print(f"{pathlib.Path(ticket).name}: {len(arts)} artifacts, {dict(count)}")
    for a in arts:
        if a["verdict"] != "PASS":
            print(f"  {a['target']['name'] if isinstance(a.get('target'), dict) else '?'}: {a['verdict']}: {a['reasons'][:2]}")
print(f"all: {dict(total)}; NO_GPU {total['NO_GPU']} of {sum(total.values())}")
PY
}
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
cd $R
echo "== warm-up (Triton's compile, once)"
$PT -q --ticket HOT-W op_tests/triton_tests/test_hot_01.py 2>&1 | tail -1
SESSIONS=${SESSIONS:-3}  # a short device budget: fewer sessions
echo "== 1. $SESSIONS 16-target sessions back to back"
for s in $(seq 1 $SESSIONS); do $PT -q --ticket HOT-$s op_tests/triton_tests/test_hot_*.py 2>&1 | tail -1; done
verdicts $(seq -f "$W/tickets/HOT-%g" 1 $SESSIONS)
if [ "${FOREIGN:-1}" = 1 ]; then  # FOREIGN=0: the own-load part only (a short device budget)
echo "== 2. another user's job on GPU 0 from the session's 4th target on: refused or INCONCLUSIVE, never PASS after it"
rm -f $W/cue; python3 $W/foreign.py $W/cue 30 > $W/foreign.log 2>&1 & fpid=$!
( while [ "$(ls $W/tickets/HOT-F/bench_hot_*.json 2>/dev/null | wc -l)" -lt 3 ]; do sleep 0.05; done; touch $W/cue ) &
$PT -q --ticket HOT-F op_tests/triton_tests/test_hot_*.py 2>&1 | tail -1
wait $fpid; cat $W/foreign.log
verdicts $W/tickets/HOT-F
fi
python3 -m pytest_gpuverify.cli.main check $(seq -f "$W/tickets/HOT-%g" 1 $SESSIONS) | tail -2; echo "check exit $?"
} 2>&1 | tee $OUT/nogpu_h200.log
tar -C $W -czf $OUT/tickets.tgz tickets
