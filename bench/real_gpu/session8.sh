#!/usr/bin/env bash
# On the lent H200 (no Docker: --gpu-container none). In one call: 3 runs each of the plugin
# on one harness target (default options), the bare harness, and pytest's own start with the same
# plugins in an empty folder; the NVML handoff; a kill -9 of pytest under the session guard; the
# NVML tests; `gpuverify check` over the ticket folder (exclusivity). Logs go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS="$top/../.whl"; . "$here/sandbox.sh"; mkdir -p $W/empty
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
now() { date +%s.%N; }
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== 1. plugin (one harness target, default options) / bare harness / pytest's own start (same plugins, empty folder), 3 runs each"
cd $W/repos/aiter; $PT -q --ticket S8-0 --gpu-target triton-softmax-perf > $W/plugin0.log 2>&1  # warm-ups: caches, page cache
python3 op_tests/op_benchmarks/triton/bench_softmax.py > $W/bare0.log 2>&1; echo "warm-up runs done"
for i in 1 2 3; do
  cd $W/repos/aiter; t0=$(now); $PT -q --ticket S8-$i --gpu-target triton-softmax-perf > $W/plugin$i.log 2>&1; rc=$?; t1=$(now)
  echo "plugin $i: $(python3 -c "print(f'{$t1-$t0:.3f}')") s exit $rc"
  t0=$(now); python3 op_tests/op_benchmarks/triton/bench_softmax.py > $W/bare$i.log 2>&1; rc=$?; t1=$(now)
  echo "bare $i: $(python3 -c "print(f'{$t1-$t0:.3f}')") s exit $rc"
  cd $W/empty; t0=$(now); python3 -m pytest -q --co -p pytest_gpuverify.plugin -p no:cacheprovider > $W/start$i.log 2>&1; rc=$?; t1=$(now)
  echo "pytest start $i: $(python3 -c "print(f'{$t1-$t0:.3f}')") s exit $rc"
done
tail -3 $W/plugin1.log
python3 - $W/tickets $OUT/session8_run.log <<'PY'
import json, re, statistics, sys, pathlib
from pytest_gpuverify.common.clock import parse_iso_utc as p
log = pathlib.Path(sys.argv[2]).read_text()
t = {k: [float(x) for x in re.findall(rf"^{k} \d: ([0-9.]+) s", log, re.M)] for k in ("plugin", "bare", "pytest start")}
m = {k: statistics.median(v) for k, v in t.items()}
print(f"medians: plugin {m['plugin']:.3f} s, bare {m['bare']:.3f} s, pytest start {m['pytest start']:.3f} s; "
      f"plugin - bare - pytest start = {m['plugin'] - m['bare'] - m['pytest start']:.3f} s (target <= 0.5 s)")
own = []
for i, d in enumerate(sorted(pathlib.Path(sys.argv[1]).glob("S8-[123]"))):
    a = json.loads((d / "bench_triton-softmax-perf.json").read_text()); tl = a["timeline"]
    cmd = p(tl["command_ended"]) - p(tl["command_started"])
    own.append(t["plugin"][i] - cmd - m["pytest start"])
    print(f"{d.name}: verdict {a['verdict']}, pick {1000*(p(tl['lock_taken'])-p(tl['pick_started'])):.1f} ms, "
          f"collection -> lock {1000*(p(tl['lock_taken'])-p(tl['collected'])):.1f} ms, the harness in it {cmd:.3f} s, "
          f"plugin - its harness - pytest start = {own[-1]:.3f} s; notes {a['notes'][:1]}")
print(f"the plugin's own work (plugin - the harness it ran - pytest start), median {statistics.median(own):.3f} s (target <= 0.5 s)")
PY
cd $W/repos/aiter && python3 -X importtime -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q --ticket S8-IT --gpu-target triton-softmax-perf 2> $W/importtime.txt > /dev/null
echo "imports of the plugin run (self us | cumulative us), the largest:"; grep -E "pytest_gpuverify|pydantic |pynvml|docker" $W/importtime.txt | sort -t'|' -k2 -n | tail -6
echo "== 2. doctor"
python3 -m pytest_gpuverify.cli.main doctor --gpu-env $W/env.md | grep -E "^(readings|window|gpu )"
echo "== 3. NVML handoff (4 sessions x 6 targets on GPU 0)"
cd $top && python3 bench/handoff.py --real sm_90
echo "== 4. kill -9 of pytest while its command loads the GPU: the session guard stops it, then the lock goes"
cd $W/repos/aiter && python3 $here/kill9.py $W/locks/gpu-0.lock $W/tickets/H200-K9 -- $PT --ticket H200-K9 --gpu-target gpu-load; echo "kill9 exit $?"
echo "== 5. gpuverify check over the ticket folders (each artifact, and no two runs on one GPU at once)"
cd $top && python3 -m pytest_gpuverify.cli.main check $W/tickets/S8-* | tail -4
echo "== 6. NVML backend tests on real hardware"
cd $top && python3 -m pytest -p no:cacheprovider -q tests/test_nvidia_backend.py 2>&1 | tail -3
} 2>&1 | tee "$OUT/session8_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
