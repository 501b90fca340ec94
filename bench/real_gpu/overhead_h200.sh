#!/usr/bin/env bash
# The plugin's own time per session on the lent H200, two checkouts interleaved in one call: $A
# (before) and $B (after; default: this checkout). Target: the Triton vector add test file (a pytest
# target, --gpu-container none), warm caches. Each plugin run sits between two of pytest's own starts
# with the same plugins and checkout (`pytest -q --co` in an empty folder): the figure per run is
# wall - the command's span (its artifact's timeline) - the mean of those two starts (bench/startup.py
# --runs); its median per checkout. Two blocks: with the plugins installed there autoloaded (as a user
# runs it; their start varies by tenths of a second), and with only this plugin (PYTEST_DISABLE_PLUGIN_
# AUTOLOAD=1: the same figure without the other plugins' noise). Both checkouts, the carried wheels and
# the machine's pynvml are byte-compiled first, as pip does at install. Then B's --gpu-profile.
#   A=/path/before B=/path/after WHEELS=/path/wheels ROUNDS=5 bash bench/real_gpu/overhead_h200.sh
#   SIDES=B BLOCKS=auto ROUNDS=12 bash bench/real_gpu/overhead_h200.sh   # this checkout, one block
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
B=${B:-$top}; A=${A:-}; WHEELS=${WHEELS:-$top/.whl}; ROUNDS=${ROUNDS:-5}
SIDES=${SIDES:-A B}; BLOCKS=${BLOCKS:-auto only}  # SIDES="B": this checkout alone; BLOCKS="auto": that block alone
. "$here/sandbox.sh"; mkdir -p $W/empty
use() { export PYTHONPATH=/tmp/site:$1; }
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
TARGET=op_tests/triton_tests/test_triton_add.py
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.3f}')"; }
started() {  # pytest's own start with the plugins of this block, checkout $1: seconds
  use $1; cd $W/empty; local t0=$(now); python3 -m pytest -q --co -p pytest_gpuverify.plugin -p no:cacheprovider > /dev/null 2>&1
  secs $t0 $(now)
}
block() {  # $1: a name for the block; the environment says which plugins load
  for i in $(seq 1 $ROUNDS); do
    for t in $SIDES; do
      s0=$(started ${!t})
      use ${!t}; cd $W/repos/aiter; t0=$(now); $PT -q --ticket O$1$t-$i $TARGET > $W/plugin$1$t$i.log 2>&1; rc=$?; t1=$(now)
      s1=$(started ${!t}); s=$(python3 -c "print(f'{($s0 + $s1) / 2:.3f}')")
      echo "plugin $1 $t $i: $(secs $t0 $t1) s exit $rc; pytest start before/after $s0/$s1 s"
      echo "O$1$t-$i $t0 $t1 $s" >> $W/runs$1$t.txt
    done
  done
  for t in $SIDES; do
    echo "-- $1 $t, from the timelines (own = wall - command - pytest's start, the mean of the runs just before and after):"
    use $B; python3 $B/bench/startup.py --runs $W/runs$1$t.txt --tickets $W/tickets
  done
}
{
echo "== versions"; nvidia-smi -L; use $B; python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'dont_write_bytecode', sys.flags.dont_write_bytecode)"
echo "A $(cat $A/.rev 2>/dev/null)  B $(cat $B/.rev 2>/dev/null)"; python3 -m pip list 2>/dev/null | grep -i "^pytest"
python3 -m compileall -q /tmp/site ${A:+$A/pytest_gpuverify} $B/pytest_gpuverify > /dev/null; echo "byte-compiled: /tmp/site, $SIDES"
. "$here/compile_pynvml.sh"; echo "pynvml: $PYNVML_BYTECODE"
cd $W/repos/aiter
for k in 1 2; do for t in $SIDES; do use ${!t}; $PT -q --ticket W$k$t $TARGET > $W/warm$k$t.log 2>&1; echo "warm-up $k $t exit $?"; done; done
case " $BLOCKS " in *" auto "*)
  echo "== 1. $ROUNDS rounds of $SIDES, the plugins installed here autoloaded; each run between two of pytest's starts"
  block auto;; esac
case " $BLOCKS " in *" only "*)
  echo "== 2. $ROUNDS rounds of $SIDES, only this plugin (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1)"
  export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; block only; unset PYTEST_DISABLE_PLUGIN_AUTOLOAD;; esac
echo "== 3. B's --gpu-profile, two sessions (plugins autoloaded)"
use $B; cd $W/repos/aiter
for k in 1 2; do $PT -q --ticket P$k --gpu-profile $TARGET 2>&1 | sed -n '/gpuverify profile/,$p'; done
echo "== 4. gpuverify check over B's tickets"
cd $B && python3 -m pytest_gpuverify.cli.main check $(ls -d $W/tickets/O*B-*) | tail -3
} 2>&1 | tee "$OUT/overhead_h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
