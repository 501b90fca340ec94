#!/usr/bin/env bash
# --gpu-trace kernels on the lent H200 (no Docker, no nsys there: torch's profiler traces, CUPTI through
# Kineto). Triton's tutorial kernels (vector add, matmul) in a harness that times a loop of launches between
# CUDA events, honest and with a planted timer patch (its measured time divided by 10). Prints per row the
# printed time against the trace's kernels, the verdicts, the timed runs' figures with vs without the trace
# run, and compare's note on two commits whose kernels are the same binaries; `gpuverify check` on each.
#   WHEELS=/path/wheels bash bench/real_gpu/trace_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}; . "$here/sandbox.sh"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env=$W/env.md"
GV="python3 -m pytest_gpuverify.cli.main"
T=$W/tickets
cd $W/repos/aiter
{
echo "== versions"; nvidia-smi -L; command -v nsys || echo "no nsys: torch's profiler traces"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== 1. timed runs without the trace"
$PT -q --ticket TR-1 --gpu-target traced-add --gpu-target traced-matmul | tail -3
echo "== 2. the same with --gpu-trace kernels (honest: PASS, printed >= the kernels' time)"
start=$(date +%s.%N)
$PT -q --ticket TR-2 --gpu-target traced-add --gpu-target traced-matmul --gpu-trace kernels | tail -3
echo "session seconds: $(python3 -c "import sys; print(round($(date +%s.%N) - $start, 1))")"
for t in traced-add traced-matmul; do
  python3 $here/trace_report.py $T/TR-2/bench_$t.json --without $T/TR-1/bench_$t.json
done
echo "== 3. the timer patch (measured time / 10) with --gpu-trace: INCONCLUSIVE naming both figures"
$PT -q --ticket TR-3 --gpu-target traced-add-patched --gpu-trace kernels | tail -3
python3 $here/trace_report.py $T/TR-3/bench_traced-add-patched.json
echo "== 4. the same patch without the trace: it passes (the point of the trace)"
$PT -q --ticket TR-4 --gpu-target traced-add-patched | tail -3
python3 $here/trace_report.py $T/TR-4/bench_traced-add-patched.json
echo "== 5. a commit that leaves the kernels alone: compare notes the same binaries"
echo "# a comment: the kernels' code is unchanged" >> op_tests/op_benchmarks/triton/bench_traced.py
git -c user.name=b -c user.email=b@b commit -qam "comment only"
$PT -q --ticket TR-5 --gpu-target traced-add --gpu-trace kernels | tail -3
$GV compare $T/TR-2/bench_traced-add.json $T/TR-5/bench_traced-add.json | grep -i "binar\|kernels differ\|SAME\|IMPROVED\|REGRESSED" | head -12
echo "== 6. a profile on demand: ncu (installed there), limited to the add kernel"
$PT -q --ticket TR-6 --gpu-target traced-add --gpu-profiler ncu --gpu-profiler-filter add_kernel | tail -3
python3 $here/trace_report.py $T/TR-6/bench_traced-add.json
echo "== 7. gpuverify check on every artifact (the traces' hashes, the re-derived rule)"
for a in $T/*/bench_*.json; do echo "$a: $($GV check "$a" | tail -1)"; done
} 2>&1 | tee "$OUT/trace_h200.log"
tar czf "$OUT/trace_tickets.tar.gz" -C $T .
