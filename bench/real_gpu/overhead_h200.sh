#!/usr/bin/env bash
# The plugin's own time per session on the lent H200, two checkouts interleaved in one call: $A
# (before) and $B (after; default: this checkout). Target: the Triton vector add test file (a pytest
# target, --gpu-container none), warm caches. Each round: the plugin run with A and with B, then
# pytest's own start with the same plugins (`pytest -q --co` in an empty folder) with A and with B.
# The figure per checkout: wall - the command's span (its artifact's timeline) - pytest's start
# (bench/startup.py --runs). Then B's --gpu-profile of a first and a second session, and B's imports.
#   A=/path/before B=/path/after WHEELS=/path/wheels ROUNDS=5 bash bench/real_gpu/overhead_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
B=${B:-$top}; A=${A:?the other checkout}; WHEELS=${WHEELS:-$top/../.whl}; ROUNDS=${ROUNDS:-5}
. "$here/sandbox.sh"; mkdir -p $W/empty
use() { export PYTHONPATH=/tmp/site:$1; }
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
TARGET=op_tests/triton_tests/test_triton_add.py
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.3f}')"; }
{
echo "== versions"; nvidia-smi -L; use $B; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "A $(cat $A/.rev 2>/dev/null)  B $(cat $B/.rev 2>/dev/null)"
cd $W/repos/aiter
for t in A B; do use ${!t}; $PT -q --ticket W$t $TARGET > $W/warm$t.log 2>&1; echo "warm-up $t exit $?"; done
for t in A B; do use ${!t}; $PT -q --ticket W2$t $TARGET > $W/warm2$t.log 2>&1; echo "warm-up 2 $t exit $?"; done
if [ "${ONLY_EXIT:-}" = 1 ]; then ROUNDS=0; fi
echo "== 1. $ROUNDS rounds: plugin A, plugin B, pytest start A, pytest start B"
for i in $(seq 1 $ROUNDS); do
  for t in A B; do
    use ${!t}; cd $W/repos/aiter; t0=$(now); $PT -q --ticket O$t-$i $TARGET > $W/plugin$t$i.log 2>&1; rc=$?; t1=$(now)
    echo "plugin $t $i: $(secs $t0 $t1) s exit $rc"; echo "O$t-$i $t0 $t1" >> $W/runs$t.txt
  done
  for t in A B; do
    use ${!t}; cd $W/empty; t0=$(now); python3 -m pytest -q --co -p pytest_gpuverify.plugin -p no:cacheprovider > $W/start$t$i.log 2>&1; rc=$?; t1=$(now)
    echo "pytest start $t $i: $(secs $t0 $t1) s exit $rc"
  done
done
tail -3 $W/pluginB1.log
for t in A B; do
  s=$(python3 - $OUT/overhead_h200_run.log $t <<'PY'
import re, statistics, sys
log = open(sys.argv[1]).read()
print(f"{statistics.median(float(x) for x in re.findall(rf'^pytest start {sys.argv[2]} \d+: ([0-9.]+) s', log, re.M)):.4f}")
PY
)
  echo "-- $t, from the timelines (own = wall - command - pytest start $s s):"; use $B
  python3 $B/bench/startup.py --runs $W/runs$t.txt --tickets $W/tickets --start $s
done
echo "== 2. B's --gpu-profile, two sessions"
use $B; cd $W/repos/aiter
for k in 1 2; do $PT -q --ticket P$k --gpu-profile $TARGET 2>&1 | sed -n '/gpuverify profile/,$p'; done
echo "== 3. B's imports (self us | cumulative us), the largest of ours"
python3 -X importtime -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q --ticket IT2 $TARGET 2> $W/importtime.txt > /dev/null
grep -E "pytest_gpuverify|pydantic |pynvml|docker|requests" $W/importtime.txt | sort -t'|' -k2 -n | tail -8
echo "== 5. after B's command: to its last phase, to pytest.main's return, to the process's exit; the plugins here"
cd $W/repos/aiter; python3 -m pytest --version 2>&1 | head -3; python3 -m pip list 2>/dev/null | grep -i pytest
for k in 1 2 3; do
  python3 $B/bench/real_gpu/exit_split.py -q -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none \
    --gpu-env $W/env.md --ticket X$k $TARGET > $W/exit$k.log 2>&1; t1=$(now)
  r=$(sed -n 's/.*returned at \([0-9.]*\).*/\1/p' $W/exit$k.log); grep -E "exit split|modules:" $W/exit$k.log; echo "  returned -> process exit $(secs $r $t1) s"
done
echo "== 4. gpuverify check over B's tickets"
cd $B && python3 -m pytest_gpuverify.cli.main check $W/tickets/OB-* | tail -3
} 2>&1 | tee "$OUT/overhead_h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
