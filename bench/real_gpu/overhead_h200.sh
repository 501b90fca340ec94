#!/usr/bin/env bash
# The plugin's own time per session on the lent H200, two checkouts interleaved in one call: $A
# (before) and $B (after; default: this checkout). Target: the Triton vector add test file (a pytest
# target, --gpu-container none), warm caches. Each round: the plugin run with A and with B, then
# pytest's own start with the same plugins (`pytest -q --co` in an empty folder) with A and with B.
# The figure per run: wall - the command's span (its artifact's timeline) - pytest's start timed in
# the same round (bench/startup.py --runs); its median per checkout. Two blocks: with the plugins
# installed there autoloaded (as a user runs it), and with only this plugin (PYTEST_DISABLE_PLUGIN_
# AUTOLOAD=1: the same figure without the other plugins' noise). Both checkouts and the carried
# wheels are byte-compiled first, as pip does at install. Then B's --gpu-profile of two sessions.
#   A=/path/before B=/path/after WHEELS=/path/wheels ROUNDS=5 bash bench/real_gpu/overhead_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
B=${B:-$top}; A=${A:?the other checkout}; WHEELS=${WHEELS:-$top/.whl}; ROUNDS=${ROUNDS:-5}
. "$here/sandbox.sh"; mkdir -p $W/empty
use() { export PYTHONPATH=/tmp/site:$1; }
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
TARGET=op_tests/triton_tests/test_triton_add.py
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.3f}')"; }
block() {  # $1: a name for the block; the environment says which plugins load
  for i in $(seq 1 $ROUNDS); do
    for t in A B; do
      use ${!t}; cd $W/repos/aiter; t0=$(now); $PT -q --ticket O$1$t-$i $TARGET > $W/plugin$1$t$i.log 2>&1; rc=$?; t1=$(now)
      echo "plugin $1 $t $i: $(secs $t0 $t1) s exit $rc"; echo "O$1$t-$i $t0 $t1" >> $W/runs$1$t.txt
    done
    for t in A B; do
      use ${!t}; cd $W/empty; t0=$(now); python3 -m pytest -q --co -p pytest_gpuverify.plugin -p no:cacheprovider > /dev/null 2>&1; t1=$(now)
      s=$(secs $t0 $t1); echo "pytest start $1 $t $i: $s s"; sed -i "\$s/\$/ $s/" $W/runs$1$t.txt
    done
  done
  for t in A B; do
    echo "-- $1 $t, from the timelines (own = wall - command - pytest's start of the same round):"; use $B
    python3 $B/bench/startup.py --runs $W/runs$1$t.txt --tickets $W/tickets
  done
}
{
echo "== versions"; nvidia-smi -L; use $B; python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'dont_write_bytecode', sys.flags.dont_write_bytecode)"
echo "A $(cat $A/.rev 2>/dev/null)  B $(cat $B/.rev 2>/dev/null)"; python3 -m pip list 2>/dev/null | grep -i "^pytest"
python3 -m compileall -q /tmp/site $A/pytest_gpuverify $B/pytest_gpuverify > /dev/null; echo "byte-compiled: /tmp/site, A, B"
. "$here/compile_pynvml.sh"; echo "pynvml: $PYNVML_BYTECODE"
cd $W/repos/aiter
for k in 1 2; do for t in A B; do use ${!t}; $PT -q --ticket W$k$t $TARGET > $W/warm$k$t.log 2>&1; echo "warm-up $k $t exit $?"; done; done
echo "== 1. $ROUNDS rounds, the plugins installed here autoloaded: plugin A, plugin B, pytest start A, pytest start B"
block auto
echo "== 2. $ROUNDS rounds, only this plugin (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1)"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; block only; unset PYTEST_DISABLE_PLUGIN_AUTOLOAD
echo "== 3. B's --gpu-profile, two sessions (plugins autoloaded)"
use $B; cd $W/repos/aiter
for k in 1 2; do $PT -q --ticket P$k --gpu-profile $TARGET 2>&1 | sed -n '/gpuverify profile/,$p'; done
echo "== 4. gpuverify check over B's tickets"
cd $B && python3 -m pytest_gpuverify.cli.main check $W/tickets/OautoB-* $W/tickets/OonlyB-* | tail -3
} 2>&1 | tee "$OUT/overhead_h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
