#!/usr/bin/env bash
# The performance figures on the lent H200 in one call, for two checkouts interleaved:
# $A (before) and $B (after; default: this checkout). (a) 4 rounds of: the plugin run of one harness
# target (default options, --gpu-container none) with A and with B, the bare harness, pytest's own
# start with the same plugins in an empty folder with A and with B; the figure plugin - bare -
# start per checkout, and each plugin run's steps from its artifact's timeline (bench/startup.py).
# (b) bench/handoff.py with the simulated amdsmi library (this machine's quiet CPUs), A and B, and
# with NVML on the real GPU (B). Then bench/startup.py on the simulated host (A against B), the NVML
# tests and `gpuverify check` over B's ticket folders. Logs go to $OUT.
#   A=/path/before B=/path/after WHEELS=/path/wheels bash bench/real_gpu/session9.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
B=${B:-$top}; A=${A:?the other checkout}; WHEELS=${WHEELS:-$top/../.whl}
. "$here/sandbox.sh"; mkdir -p $W/empty
use() { export PYTHONPATH=/tmp/site:$1; }
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.3f}')"; }
{
echo "== versions"; nvidia-smi -L; use $B; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "A $(cat $A/.rev 2>/dev/null)  B $(cat $B/.rev 2>/dev/null)"
echo "== 1. plugin (one harness target, default options) with A and B / bare harness / pytest's own start (same plugins, empty folder) with A and B, 4 rounds"
cd $W/repos/aiter
for t in A B; do use ${!t}; $PT -q --ticket W$t --gpu-target triton-softmax-perf > $W/plugin_w$t.log 2>&1; done  # warm-ups
python3 op_tests/op_benchmarks/triton/bench_softmax.py > $W/bare0.log 2>&1; echo "warm-up runs done"
for i in 1 2 3 4; do
  for t in A B; do
    use ${!t}; cd $W/repos/aiter; t0=$(now); $PT -q --ticket S9$t-$i --gpu-target triton-softmax-perf > $W/plugin$t$i.log 2>&1; rc=$?; t1=$(now)
    echo "plugin $t $i: $(secs $t0 $t1) s exit $rc"; echo "S9$t-$i $t0 $t1" >> $W/runs$t.txt
  done
  cd $W/repos/aiter; t0=$(now); python3 op_tests/op_benchmarks/triton/bench_softmax.py > $W/bare$i.log 2>&1; rc=$?; t1=$(now)
  echo "bare $i: $(secs $t0 $t1) s exit $rc"
  for t in A B; do
    use ${!t}; cd $W/empty; t0=$(now); python3 -m pytest -q --co -p pytest_gpuverify.plugin -p no:cacheprovider > $W/start$t$i.log 2>&1; rc=$?; t1=$(now)
    echo "pytest start $t $i: $(secs $t0 $t1) s exit $rc"
  done
done
tail -2 $W/pluginB1.log
use $B
python3 - $OUT/session9_run.log <<'PY'
import re, statistics, sys, pathlib
log = pathlib.Path(sys.argv[1]).read_text()
def med(pat): return statistics.median(float(x) for x in re.findall(pat, log, re.M))
bare = med(r"^bare \d: ([0-9.]+) s")
for t in "AB":
    p, s = med(rf"^plugin {t} \d: ([0-9.]+) s"), med(rf"^pytest start {t} \d: ([0-9.]+) s")
    print(f"{t}: medians plugin {p:.3f} s, bare {bare:.3f} s, pytest start {s:.3f} s; plugin - bare - pytest start = {p - bare - s:.3f} s (target <= 0.5 s)")
    open(f"/tmp/rg/start{t}.txt", "w").write(str(s))
PY
for t in A B; do echo "$t, from the timelines:"; python3 $B/bench/startup.py --runs $W/runs$t.txt --tickets $W/tickets --start $(cat $W/start$t.txt); done
cd $W/repos/aiter && python3 -X importtime -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q --ticket S9-IT --gpu-target triton-softmax-perf 2> $W/importtime.txt > /dev/null
echo "imports of B's plugin run (self us | cumulative us), the largest:"; grep -E "pytest_gpuverify|pydantic |pynvml|docker" $W/importtime.txt | sort -t'|' -k2 -n | tail -6
echo "== 2. handoff, simulated ROCm host through the simulated amdsmi library (and the amd-smi tool), this machine's CPUs"
for t in A B; do echo "-- $t"; use ${!t}; cd ${!t} && timeout 150 python3 bench/handoff.py; done
echo "== 3. handoff, NVML on the real GPU 0 (B)"
use $B; cd $B && timeout 120 python3 bench/handoff.py --real sm_90
echo "== 4. bench/startup.py on the simulated host, B (this tree) against A (other), this machine's CPUs"
use $B; cd $B && timeout 150 python3 bench/startup.py --repeats 5 --other $A
echo "== 5. gpuverify check over B's ticket folders"
use $B; cd $B && python3 -m pytest_gpuverify.cli.main check $W/tickets/S9B-* | tail -3
echo "== 6. NVML backend tests on real hardware (B)"
cd $B && python3 -m pytest -p no:cacheprovider -q tests/test_nvidia_backend.py 2>&1 | tail -2
} 2>&1 | tee "$OUT/session9_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
